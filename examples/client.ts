// A small typed client for the webhook management API. Copy it into your application; it needs
// only `fetch`.
//
//   const api = new WebhookClient({ baseUrl: 'https://nft-webhook-api.example.workers.dev', token });
//   await api.disable(42n);
//   await api.delete('9007199254740993');

/** The reply envelope of every operation. */
export interface Envelope {
  return: number;
  message: string;
}

/** A webhook id: int64. A bigint or a decimal string keeps ids above 2^53 exact. */
export type WebhookId = bigint | string | number;

export interface ClientOptions {
  /** e.g. `https://nft-webhook-api.example.workers.dev` or `http://localhost:8787`. */
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

  /** Enables or disables a webhook. Setting the state it already has succeeds. */
  async setEnabled(webhookId: WebhookId, enabled: boolean): Promise<void> {
    // The id travels as a decimal string, which the API accepts for int64.
    return this.#call('PUT', PATH, JSON.stringify({ webhook_id: idText(webhookId), is_enabled: enabled }));
  }

  enable(webhookId: WebhookId) {
    return this.setEnabled(webhookId, true);
  }

  disable(webhookId: WebhookId) {
    return this.setEnabled(webhookId, false);
  }

  /** Deletes a webhook. Deleting one this application already deleted succeeds again. */
  async delete(webhookId: WebhookId): Promise<void> {
    return this.#call('DELETE', `${PATH}?webhook_id=${idText(webhookId)}`);
  }

  // Both operations are idempotent, so retrying them is always safe.
  async #call(method: 'PUT' | 'DELETE', path: string, body?: string): Promise<void> {
    const { baseUrl, token, maxRetries, maxRetryDelaySeconds, fetch, sleep } = this.#options;
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = {
        authorization: `Bearer ${typeof token === 'function' ? await token() : token}`,
      };
      if (body !== undefined) headers['content-type'] = 'application/json';
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
      const envelope = (await res.json()) as Envelope;
      if (res.status === 200 && envelope.return === 0) return;
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
