// A small typed client for the webhook management API. Copy it into your application; it needs
// only `fetch`.
//
//   const api = new WebhookClient({ baseUrl: 'https://nft-webhook-api-production.example.workers.dev', token });
//   const hook = await api.createWebhook('https://hooks.example.com/nft');
//   await api.disable(hook.webhook_id);
//   for await (const webhook of api.webhooks({ enabled: true })) console.log(webhook.url);
//   await api.delete('9007199254740993');

/** The reply envelope of every operation. */
export interface Envelope {
  return: number;
  message: string;
}

/** A webhook id: int64. A bigint or a decimal string keeps ids above 2^53 exact. */
export type WebhookId = bigint | string | number;

/** A registered webhook. `webhook_id` is the id's exact decimal digits (never a rounded number). */
export interface Webhook {
  webhook_id: string;
  url: string;
  is_enabled: boolean;
  created_at: string;
  updated_at: string;
}

/** One page of the list. */
export interface WebhookPage {
  webhooks: Webhook[];
  next_cursor: string | null;
}

export interface ClientOptions {
  /** e.g. `https://nft-webhook-api-production.example.workers.dev` or `http://localhost:8787`. */
  baseUrl: string;
  /** The application's access token, or a function returning a current one. */
  token: string | (() => string | Promise<string>);
  /** Retries after 429 / 503 / network errors, honouring Retry-After (default 2). */
  maxRetries?: number;
  /** The longest Retry-After the client waits out itself, in seconds (default 10). */
  maxRetryDelaySeconds?: number;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

/** A failed operation: the HTTP status tells why, `code` is the envelope's `return`. */
export class WebhookApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    /** Seconds the server asked to wait (429, 503). */
    readonly retryAfter: number | undefined,
    /** Quote it when reporting a problem. */
    readonly requestId: string | null,
    /** The server's short reason for a 4xx. */
    readonly detail: string | null,
  ) {
    super(`${status} ${code} ${message}${detail ? ` (${detail})` : ''}`);
    this.name = 'WebhookApiError';
  }

  /** The token is missing, invalid or expired: get a new one. */
  get unauthorized() {
    return this.code === 20004;
  }

  /** No such webhook for this application. */
  get notFound() {
    return this.status === 404;
  }
}

const PATH = '/v1.0/app/nft/webhook';

/**
 * Parses a reply, keeping `webhook_id`s exact: the API writes them as JSON integers, which
 * JSON.parse would round above 2^53, so their digits are quoted first. (A `"webhook_id":` inside
 * a string value is escaped as `\"webhook_id\":` and never matches.)
 */
function parseReply(text: string): Envelope & { value?: unknown } {
  return JSON.parse(text.replace(/"webhook_id":(\d+)/g, '"webhook_id":"$1"'));
}

function idText(id: WebhookId): string {
  if (typeof id === 'number' && !Number.isSafeInteger(id)) {
    throw new TypeError(`webhook id ${id} is not exact as a number: pass a bigint or a string`);
  }
  const text = String(id);
  if (!/^[0-9]+$/.test(text)) throw new TypeError(`webhook id ${text} is not a decimal integer`);
  return text;
}

export class WebhookClient {
  readonly #options: Required<Omit<ClientOptions, 'token'>> & Pick<ClientOptions, 'token'>;

  constructor(options: ClientOptions) {
    this.#options = {
      maxRetries: 2,
      maxRetryDelaySeconds: 10,
      fetch: (...args) => fetch(...args),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
    };
  }

  /** The bookmark of the last reply: sent with reads, so this client reads its own writes. */
  #bookmark: string | undefined;

  /**
   * Registers a webhook. Each call gets its own Idempotency-Key, reused by its retries, so a
   * retry after a lost reply never registers it twice.
   */
  async createWebhook(url: string, { enabled = true, idempotencyKey = crypto.randomUUID() } = {}): Promise<Webhook> {
    const body = JSON.stringify({ url, is_enabled: enabled });
    return (await this.#call('POST', PATH, body, { 'idempotency-key': idempotencyKey })) as Webhook;
  }

  /** One webhook of this application. */
  async getWebhook(webhookId: WebhookId): Promise<Webhook> {
    return (await this.#call('GET', `${PATH}?webhook_id=${idText(webhookId)}`)) as Webhook;
  }

  /** One page of this application's webhooks, oldest first. */
  async listWebhooks({
    limit,
    cursor,
    enabled,
  }: {
    limit?: number;
    cursor?: string;
    enabled?: boolean;
  } = {}): Promise<WebhookPage> {
    const query = new URLSearchParams();
    if (limit !== undefined) query.set('limit', String(limit));
    if (cursor !== undefined) query.set('cursor', cursor);
    if (enabled !== undefined) query.set('is_enabled', String(enabled));
    const q = query.toString();
    return (await this.#call('GET', q === '' ? PATH : `${PATH}?${q}`)) as WebhookPage;
  }

  /** Every webhook of this application, page after page. */
  async *webhooks(options: { limit?: number; enabled?: boolean } = {}): AsyncGenerator<Webhook> {
    let cursor: string | undefined;
    do {
      const page = await this.listWebhooks({ ...options, cursor });
      yield* page.webhooks;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** Enables or disables a webhook. Setting the state it already has succeeds. */
  async setEnabled(webhookId: WebhookId, enabled: boolean): Promise<void> {
    // The id travels as a decimal string, which the API accepts for int64.
    await this.#call('PUT', PATH, JSON.stringify({ webhook_id: idText(webhookId), is_enabled: enabled }));
  }

  enable(webhookId: WebhookId) {
    return this.setEnabled(webhookId, true);
  }

  disable(webhookId: WebhookId) {
    return this.setEnabled(webhookId, false);
  }

  /** Deletes a webhook. Deleting one this application already deleted succeeds again. */
  async delete(webhookId: WebhookId): Promise<void> {
    await this.#call('DELETE', `${PATH}?webhook_id=${idText(webhookId)}`);
  }

  // Every call is safe to retry: GET reads, PUT and DELETE are idempotent, and POST carries an
  // Idempotency-Key. Returns the reply's `value`, if any.
  async #call(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: string,
    extra: Record<string, string> = {},
  ): Promise<unknown> {
    const { baseUrl, token, maxRetries, maxRetryDelaySeconds, fetch, sleep } = this.#options;
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = {
        authorization: `Bearer ${typeof token === 'function' ? await token() : token}`,
        ...extra,
      };
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (method === 'GET' && this.#bookmark !== undefined) headers['x-d1-bookmark'] = this.#bookmark;
      let res: Response;
      try {
        res = await fetch(baseUrl + path, { method, headers, body });
      } catch (err) {
        if (attempt < maxRetries) {
          await sleep(2 ** attempt * 500);
          continue;
        }
        throw err;
      }
      this.#bookmark = res.headers.get('x-d1-bookmark') ?? this.#bookmark;
      const envelope = parseReply(await res.text());
      if ((res.status === 200 || res.status === 201) && envelope.return === 0) return envelope.value;
      const header = res.headers.get('retry-after');
      const retryAfter = header !== null && /^\d+$/.test(header) ? Number(header) : undefined;
      const retryable = res.status === 429 || res.status === 503;
      if (retryable && attempt < maxRetries && (retryAfter ?? 1) <= maxRetryDelaySeconds) {
        await sleep((retryAfter ?? 1) * 1000);
        continue;
      }
      throw new WebhookApiError(
        res.status,
        envelope.return,
        envelope.message,
        retryAfter,
        res.headers.get('x-request-id'),
        res.headers.get('x-error-detail'),
      );
    }
  }
}
