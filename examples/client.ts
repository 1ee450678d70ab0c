// A small typed client for the webhook management API. Copy it into your application; it needs
// only `fetch`.
//
//   const api = new WebhookClient({ baseUrl: 'https://nft-webhook-api-production.example.workers.dev', token });
//   const hook = await api.createWebhook('https://hooks.example.com/nft');
//   await api.disable(hook.webhook_id);
//   for await (const webhook of api.webhooks({ enabled: true })) console.log(webhook.url);
//   await api.updateWebhook(hook.webhook_id, { description: 'Orders', rateLimit: 50 });
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
  /** The event types it receives; null: every type. */
  event_types: string[] | null;
  /** What the application says it is for (at most 256 characters); null when none. */
  description: string | null;
  /** Deliveries per second it wants at most (1 to 1,000; stored now, enforced by a later release); null: none. */
  rate_limit: number | null;
  /** Its content filter (docs/filters.md), as it was sent; null: none, every event of its types. */
  filter: Filter | null;
  /** 'fifo': its deliveries one at a time, in the order of their events (docs/deliveries.md); null: no order. */
  ordering: Ordering | null;
  created_at: string;
  updated_at: string;
  /**
   * Why it is disabled: 'gone' (its endpoint answered 410 Gone), 'failing' (the service disabled it
   * after failing for too long), 'application' (disabled by the application); null while enabled.
   */
  disabled_reason: DisabledReason | null;
  /** When it was disabled; null while enabled. */
  disabled_at: string | null;
  /** Its first failed attempt since its last success; null while it is not failing. */
  failing_since: string | null;
}

/** Why a webhook is disabled. */
export type DisabledReason = 'gone' | 'failing' | 'application';

/** A webhook's ordering: 'fifo', one delivery at a time in the order of its events. */
export type Ordering = 'fifo';

/** A content filter: dotted paths and `$and`/`$or`/`$not` to conditions (docs/filters.md). */
export type Filter = { [key: string]: unknown };

/** An event as a filter sees it. */
export interface FilterEvent {
  type: string;
  data: Record<string, unknown>;
}

/** What `updateWebhook` changes: only the fields given (null clears event_types, rate_limit, description). */
export interface WebhookChanges {
  url?: string;
  eventTypes?: string[] | null;
  rateLimit?: number | null;
  description?: string | null;
  /** null removes the filter. */
  filter?: Filter | null;
  /** null: no order any more. */
  ordering?: Ordering | null;
}

/** Deliveries created in a window by their status now, and the attempts made in it (and how many failed). */
export interface DeliveryCounts {
  succeeded: number;
  failed: number;
  pending: number;
  cancelled: number;
  attempts: number;
  /** Attempts without a 2xx answer, those of deliveries still retrying included. */
  failed_attempts: number;
}

/** A webhook's health: the last 24 hours and 7 days, and the last 24 hours hour by hour (oldest first). */
export interface WebhookStats {
  webhook_id: string;
  last_24h: DeliveryCounts;
  last_7d: DeliveryCounts;
  hourly: { hour: string; succeeded: number; failed: number; attempts: number; failed_attempts: number }[];
}

/** One type of the event catalog, with an example of its `data`. */
export interface EventTypeInfo {
  type: string;
  description: string;
  example: Record<string, unknown>;
}

/** A webhook just registered: with its signing secret (`whsec_...`), shown only here and by getSecret. */
export interface CreatedWebhook extends Webhook {
  secret: string;
}

/** One delivery of an event to a webhook, as the delivery log shows it. */
export interface Delivery {
  /** The delivery's id: exact decimal digits. */
  delivery_id: string;
  /** What the receiver sees as `webhook-id`. */
  event_id: string;
  type: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  /** The latest attempt's HTTP status, or null. */
  last_status: number | null;
  /** null when the latest attempt got an HTTP reply. */
  last_error: 'timeout' | 'connection' | 'tls' | 'url_refused' | null;
  created_at: string;
}

/** One recorded attempt. */
export interface Attempt {
  attempt: number;
  attempted_at: string;
  status: number | null;
  error: Delivery['last_error'];
  duration_ms: number;
  /** The first 1 KiB of the reply body. */
  body: string | null;
}

/** An event for an application's webhooks (platform services only). */
export interface NftEvent {
  /** The application whose webhooks receive it. */
  app_id: string;
  /** e.g. NEW_NFT, MOD_NFT, MEMBER_NFT_ADD. */
  type: string;
  /**
   * What the webhooks receive as `data`, written again as JSON by the service: keys, their order
   * and strings' characters are kept, and every number's digits as this client sends them. It
   * sends with JSON.stringify, so a number a double cannot hold (above 2^53) is rounded before it
   * leaves: send such values as strings, or as raw JSON text with your own serialiser.
   */
  data: Record<string, unknown>;
  /** Makes publishing idempotent: the same id for the same application is one event. */
  id?: string;
}

/** An application as the platform sets it (platform services only). */
export interface Application {
  app_id: string;
  /** Days its events, deliveries, attempts and archives are kept. */
  retention_days: number;
  /** true: the platform set no retention, the service's default applies. */
  default: boolean;
  /** true once an erasure finished. */
  erased: boolean;
  erasure_requested_at?: string;
  erased_at?: string;
  /** What its erasures deleted, by kind (webhooks, events, deliveries, archives, ...). */
  counts?: Record<string, number>;
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
const EVENT_PATH = '/v1.0/platform/nft/event';
const APPLICATION_PATH = '/v1.0/platform/nft/application';

/**
 * Parses a reply, keeping `webhook_id`s exact: the API writes them as JSON integers, which
 * JSON.parse would round above 2^53, so their digits are quoted first. (A `"webhook_id":` inside
 * a string value is escaped as `\"webhook_id\":` and never matches.)
 */
function parseReply(text: string): Envelope & { value?: unknown } {
  return JSON.parse(text.replace(/"(webhook_id|delivery_id)":(\d+)/g, '"$1":"$2"'));
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
  async createWebhook(
    url: string,
    {
      enabled = true,
      eventTypes = null,
      description,
      rateLimit,
      filter,
      ordering,
      idempotencyKey = crypto.randomUUID(),
    }: {
      enabled?: boolean;
      eventTypes?: string[] | null;
      description?: string | null;
      rateLimit?: number | null;
      filter?: Filter | null;
      ordering?: Ordering | null;
      idempotencyKey?: string;
    } = {},
  ): Promise<CreatedWebhook> {
    const body = JSON.stringify({
      url,
      is_enabled: enabled,
      event_types: eventTypes,
      description,
      rate_limit: rateLimit,
      filter,
      ordering,
    });
    return (await this.#call('POST', PATH, body, { 'idempotency-key': idempotencyKey })) as CreatedWebhook;
  }

  /**
   * Changes the fields given of a webhook (PATCH) and nothing else; returns it as it stands. Safe
   * to retry: sending the same values again changes nothing.
   */
  async updateWebhook(webhookId: WebhookId, changes: WebhookChanges): Promise<Webhook> {
    const body = JSON.stringify({
      webhook_id: idText(webhookId),
      url: changes.url,
      event_types: changes.eventTypes,
      rate_limit: changes.rateLimit,
      description: changes.description,
      filter: changes.filter,
      ordering: changes.ordering,
    });
    return (await this.#call('PATCH', PATH, body)) as Webhook;
  }

  /**
   * Adds and removes values of a webhook's value set (what its filter's `$in_set` looks up; at
   * most 1,000 values a call); returns the set's size. Safe to retry: adding a present value or
   * removing an absent one changes nothing.
   */
  async changeValues(webhookId: WebhookId, { add, remove }: { add?: string[]; remove?: string[] }): Promise<number> {
    const body = JSON.stringify({ webhook_id: idText(webhookId), add, remove });
    return ((await this.#call('POST', `${PATH}/values`, body)) as { count: number }).count;
  }

  /** Every value of a webhook's value set, in order, page after page. */
  async *values(webhookId: WebhookId, options: { limit?: number } = {}): AsyncGenerator<string> {
    let cursor: string | undefined;
    do {
      const query = new URLSearchParams({ webhook_id: idText(webhookId) });
      if (options.limit !== undefined) query.set('limit', String(options.limit));
      if (cursor !== undefined) query.set('cursor', cursor);
      const page = (await this.#call('GET', `${PATH}/values?${query}`)) as {
        values: string[];
        next_cursor: string | null;
      };
      yield* page.values;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  /**
   * Whether `event` matches `filter` (when given; null: no filter) or else the webhook's own, with
   * the webhook's value set. Nothing is stored or sent.
   */
  async testFilter({
    filter,
    webhookId,
    event,
  }: {
    filter?: Filter | null;
    webhookId?: WebhookId;
    event: FilterEvent;
  }): Promise<boolean> {
    const body = JSON.stringify({ filter, webhook_id: webhookId === undefined ? undefined : idText(webhookId), event });
    return ((await this.#call('POST', `${PATH}/filter/test`, body)) as { matches: boolean }).matches;
  }

  /** A webhook's health: deliveries and attempts of the last 24 hours and 7 days, and hour by hour. */
  async stats(webhookId: WebhookId): Promise<WebhookStats> {
    return (await this.#call('GET', `${PATH}/stats?webhook_id=${idText(webhookId)}`)) as WebhookStats;
  }

  /**
   * Sends a delivery again (same body, same `webhook-id`) to its webhook; returns the new
   * delivery's id. Each call is a new delivery, so it is retried only when nothing was done (429).
   */
  async resend(deliveryId: WebhookId): Promise<string> {
    const body = JSON.stringify({ delivery_id: idText(deliveryId) });
    const value = (await this.#call('POST', `${PATH}/delivery/resend`, body, {}, false)) as { delivery_id: string };
    return value.delivery_id;
  }

  /** The event catalog: every type the platform publishes, with a description and an example. */
  async eventTypes(): Promise<EventTypeInfo[]> {
    return ((await this.#call('GET', '/v1.0/app/nft/event-types')) as { event_types: EventTypeInfo[] }).event_types;
  }

  /** A webhook's signing secret (`whsec_...`), to verify what it receives. */
  async getSecret(webhookId: WebhookId): Promise<string> {
    const value = (await this.#call('GET', `${PATH}/secret?webhook_id=${idText(webhookId)}`)) as { secret: string };
    return value.secret;
  }

  /**
   * Publishes an event to an application's webhooks (a platform service's token, with the
   * `events:publish` scope). Give `event.id` to make retries safe: the same id is one event.
   * Returns the event id that receivers see as `webhook-id`.
   */
  async publishEvent(event: NftEvent): Promise<string> {
    const value = (await this.#call('POST', EVENT_PATH, JSON.stringify(event))) as { event_id: string };
    return value.event_id;
  }

  /** An application's retention and erasure (a platform service's token, with the `platform:admin` scope). */
  async getApplication(appId: string): Promise<Application> {
    return (await this.#call('GET', `${APPLICATION_PATH}?app_id=${encodeURIComponent(appId)}`)) as Application;
  }

  /** Sets how many days (1 to 400) an application's history is kept (`platform:admin` scope). */
  async setRetention(appId: string, retentionDays: number): Promise<Application> {
    const body = JSON.stringify({ app_id: appId, retention_days: retentionDays });
    return (await this.#call('PUT', APPLICATION_PATH, body)) as Application;
  }

  /**
   * Erases everything the service holds for an application (`platform:admin` scope): accepted at
   * once, done within a minute; `getApplication` then says `erased: true`. Repeating it is harmless.
   */
  async eraseApplication(appId: string): Promise<void> {
    await this.#call('DELETE', `${APPLICATION_PATH}?app_id=${encodeURIComponent(appId)}`);
  }

  /** Rotates a webhook's signing secret: for 24 hours the previous one signs too. Returns the new one. */
  async rotateSecret(webhookId: WebhookId): Promise<string> {
    const body = JSON.stringify({ webhook_id: idText(webhookId) });
    return ((await this.#call('POST', `${PATH}/secret`, body)) as { secret: string }).secret;
  }

  /** Sends a test event (default type `webhook.test`, `data: {}`) to one webhook. */
  async sendTestEvent(webhookId: WebhookId, type?: string): Promise<{ event_id: string; delivery_id: string }> {
    const body = JSON.stringify({ webhook_id: idText(webhookId), type });
    return (await this.#call('POST', `${PATH}/test`, body)) as { event_id: string; delivery_id: string };
  }

  /**
   * Attempts again every failed delivery of a webhook created from `since` until `until` (default
   * now), on a fresh retry schedule. Returns how many.
   */
  async recover(webhookId: WebhookId, since: Date | string, until?: Date | string): Promise<number> {
    const iso = (t: Date | string) => (typeof t === 'string' ? t : t.toISOString());
    const body = JSON.stringify({ webhook_id: idText(webhookId), since: iso(since), until: until && iso(until) });
    return ((await this.#call('POST', `${PATH}/recover`, body)) as { deliveries: number }).deliveries;
  }

  /** One delivery with the body its requests carried (`payload`) and every attempt, oldest first. */
  async getDelivery(deliveryId: WebhookId): Promise<Delivery & { payload: string; attempt_log: Attempt[] }> {
    return (await this.#call('GET', `${PATH}/delivery?delivery_id=${idText(deliveryId)}`)) as Delivery & {
      payload: string;
      attempt_log: Attempt[];
    };
  }

  /** Every delivery of a webhook, newest first, page after page; `status` filters. */
  async *deliveries(
    webhookId: WebhookId,
    options: { limit?: number; status?: Delivery['status'] } = {},
  ): AsyncGenerator<Delivery> {
    let cursor: string | undefined;
    do {
      const query = new URLSearchParams({ webhook_id: idText(webhookId) });
      if (options.limit !== undefined) query.set('limit', String(options.limit));
      if (options.status !== undefined) query.set('status', options.status);
      if (cursor !== undefined) query.set('cursor', cursor);
      const page = (await this.#call('GET', `${PATH}/delivery?${query}`)) as {
        deliveries: Delivery[];
        next_cursor: string | null;
      };
      yield* page.deliveries;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
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

  // Calls are safe to retry: GET reads, PUT, PATCH and DELETE are idempotent, a webhook's POST carries
  // an Idempotency-Key (and an event's, its id when given). A call that is not (`idempotent`
  // false: a resend) is retried only after a 429, when nothing was done. Returns the reply's `value`, if any.
  async #call(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    body?: string,
    extra: Record<string, string> = {},
    idempotent = true,
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
        if (idempotent && attempt < maxRetries) {
          await sleep(2 ** attempt * 500);
          continue;
        }
        throw err;
      }
      this.#bookmark = res.headers.get('x-d1-bookmark') ?? this.#bookmark;
      const envelope = parseReply(await res.text());
      if (res.status >= 200 && res.status <= 202 && envelope.return === 0) return envelope.value;
      const header = res.headers.get('retry-after');
      const retryAfter = header !== null && /^\d+$/.test(header) ? Number(header) : undefined;
      const retryable = res.status === 429 || (res.status === 503 && idempotent);
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
