import {
  createExecutionContext,
  createMessageBatch,
  env,
  getQueueResult,
  SELF,
  waitOnExecutionContext,
} from 'cloudflare:test';
import { SignJWT } from 'jose';
import { expect, vi } from 'vitest';
import worker from '../src/index';

export const PATH = '/v1.0/app/nft/webhook';
export const ORIGIN = 'https://webhooks.test';
export const URL_ = ORIGIN + PATH;

const now = () => Math.floor(Date.now() / 1000);

/**
 * A token valid for the test configuration, naming `appId`. `claims` entries override the
 * defaults; an entry set to undefined removes that claim. Signed HS256 with the test secret unless
 * `key` and `alg` say otherwise.
 */
export async function tokenFor(
  appId: string,
  claims: Record<string, unknown> = {},
  {
    secret = env.JWT_SECRET,
    key,
    alg = 'HS256',
    header = {},
  }: { secret?: string; key?: CryptoKey | Uint8Array; alg?: string; header?: Record<string, unknown> } = {},
): Promise<string> {
  const payload: Record<string, unknown> = {
    sub: appId,
    iss: env.JWT_ISSUER,
    aud: env.JWT_AUDIENCE,
    iat: now(),
    exp: now() + 300,
    ...claims,
  };
  for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
  return new SignJWT(payload)
    .setProtectedHeader({ alg, typ: 'JWT', ...header })
    .sign(key ?? new TextEncoder().encode(secret));
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** DELETE with a raw query string (`webhook_id=...`), through the Worker's real entry point. */
export function del(query: string | null, headers: Record<string, string>): Promise<Response> {
  return SELF.fetch(query === null ? URL_ : `${URL_}?${query}`, { method: 'DELETE', headers });
}

/** PUT with a body: strings and bytes are sent as they are, anything else as JSON. */
export function put(body: unknown, headers: Record<string, string>): Promise<Response> {
  return SELF.fetch(URL_, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
}

/** POST with a body (strings as they are, anything else as JSON). */
export function post(body: unknown, headers: Record<string, string>): Promise<Response> {
  return SELF.fetch(postRequest(body, headers));
}

export const postRequest = (body: unknown, headers: Record<string, string>) =>
  new Request(URL_, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** GET with a raw query string (or none). */
export function get(query: string | null, headers: Record<string, string>): Promise<Response> {
  return SELF.fetch(query === null ? URL_ : `${URL_}?${query}`, { headers });
}

/** Calls the Worker's entry point directly, with the bindings given. */
export async function fetchWorker(request: Request, bindings: object): Promise<Response> {
  return worker.fetch(
    request as Request<unknown, IncomingRequestCfProperties>,
    bindings as CloudflareBindings,
    createExecutionContext(),
  );
}

/** Calls the Worker with some bindings changed (configuration tests). */
export const fetchWith = (overrides: Record<string, unknown>, request: Request) =>
  fetchWorker(request, { ...env, ...overrides });

/**
 * Makes one request that reaches D1, so that the isolate holds a bookmark: the reply of a later
 * failure in D1 then carries that one, and the Worker asks D1 nothing more (which counts of round
 * trips would see). Without it, whether a test of a failure runs first in its file would matter.
 */
export async function holdBookmark(): Promise<void> {
  const res = await fetchWorker(new Request(URL_, { headers: bearer(await tokenFor('bookmark-holder')) }), env);
  expect(res.headers.get('x-d1-bookmark')).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
}

/** Asserts the status and the exact envelope, and the headers every reply carries. */
export async function expectEnvelope(res: Response, status: number, code: number, message: string) {
  const text = await res.text();
  expect({ status: res.status, body: JSON.parse(text) }).toEqual({ status, body: { return: code, message } });
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('x-request-id')).toMatch(/^\S{1,128}$/);
}

/** A webhook as a reply's `value` holds it, parsed (ids here stay below 2^53). */
export interface Webhook {
  webhook_id: number;
  url: string;
  is_enabled: boolean;
  event_types: string[] | null;
  created_at: string;
  updated_at: string;
}

/**
 * Asserts a successful reply with data: the status, `{return: 0, message: "success", value}` and
 * the common headers. Returns the body's text (to check exact digits) and the parsed value.
 */
export async function expectValue<T = Record<string, unknown>>(
  res: Response,
  status = 200,
): Promise<{ text: string; value: T }> {
  const text = await res.text();
  const body = JSON.parse(text) as { return: number; message: string; value: T };
  expect({ status: res.status, return: body.return, message: body.message }).toEqual({
    status,
    return: 0,
    message: 'success',
  });
  expect(Object.keys(body).sort()).toEqual(['message', 'return', 'value']);
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('x-d1-bookmark')).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
  return { text, value: body.value };
}

export const expectSuccess = (res: Response) => expectEnvelope(res, 200, 0, 'success');
export const expectInvalidToken = (res: Response) => expectEnvelope(res, 401, 20004, 'Invalid jwt token');
export const expectUpdateFail = (res: Response, status: number) => expectEnvelope(res, status, 64062, 'update fail');
export const expectDeleteFail = (res: Response, status: number) => expectEnvelope(res, status, 64063, 'delete fail');
export const expectCreateFail = (res: Response, status: number) => expectEnvelope(res, status, 64061, 'create fail');
export const expectQueryFail = (res: Response, status: number) => expectEnvelope(res, status, 64060, 'query fail');

// ---- database ---------------------------------------------------------------------------------

/** Inserts a webhook by hand (no audit record) and returns its id as decimal text. */
export async function insertWebhook(
  appId: string,
  { enabled = true, id, url }: { enabled?: boolean; id?: string; url?: string } = {},
): Promise<string> {
  const row = await env.DB.prepare(
    `INSERT INTO webhooks (webhook_id, app_id, url, is_enabled)
     VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4)
     RETURNING CAST(webhook_id AS TEXT) AS id`,
  )
    .bind(id ?? null, appId, url ?? `https://${appId}.example/hook`, enabled ? 1 : 0)
    .first<{ id: string }>();
  return row!.id;
}

export interface WebhookRow {
  webhook_id: string;
  app_id: string;
  url: string;
  is_enabled: number;
  event_types: string | null;
  created_at: string;
  updated_at: string;
  description: string | null;
  rate_limit: number | null;
}

export async function webhookRow(id: string): Promise<WebhookRow | null> {
  return env.DB.prepare(
    `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, url, is_enabled, event_types, created_at, updated_at,
       description, rate_limit
     FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)`,
  )
    .bind(id)
    .first<WebhookRow>();
}

export interface AuditRow {
  webhook_id: string;
  app_id: string;
  action: string;
  row_before: string;
  actor: string;
  actor_jti: string | null;
  request_id: string;
  created_at: string;
}

export async function auditRows(id: string): Promise<AuditRow[]> {
  const { results } = await env.DB.prepare(
    `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, action, row_before, actor, actor_jti,
            request_id, created_at
     FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER) ORDER BY audit_id`,
  )
    .bind(id)
    .all<AuditRow>();
  return results;
}

/** Every row of every table, to show that a request changed nothing. */
export async function snapshot(): Promise<unknown> {
  const [webhooks, audit, keys] = await env.DB.batch([
    env.DB.prepare('SELECT *, CAST(webhook_id AS TEXT) AS id FROM webhooks ORDER BY webhook_id'),
    env.DB.prepare('SELECT *, CAST(webhook_id AS TEXT) AS id FROM webhook_audit ORDER BY audit_id'),
    env.DB.prepare('SELECT * FROM idempotency_keys ORDER BY app_id, idem_key'),
  ]);
  return { webhooks: webhooks!.results, audit: audit!.results, keys: keys!.results };
}

/** The application's webhooks, oldest first, as the tables hold them. */
export async function webhooksOf(appId: string): Promise<WebhookRow[]> {
  const { results } = await env.DB.prepare(
    `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, url, is_enabled, event_types, created_at, updated_at,
       description, rate_limit
     FROM webhooks WHERE app_id = ?1 ORDER BY webhook_id`,
  )
    .bind(appId)
    .all<WebhookRow>();
  return results;
}

/**
 * Wraps a D1 binding so that `roundTrip` runs each of its round trips: a `batch` or `exec`, a
 * statement's `first` / `run` / `all` / `raw`, on the database or on any of its sessions.
 */
function interceptDb(db: D1Database, roundTrip: <T>(run: () => Promise<T>) => Promise<T>): D1Database {
  const statement = (stmt: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(stmt, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (typeof value !== 'function') return value;
        if (prop === 'bind') return (...args: unknown[]) => statement(value.apply(target, args));
        if (prop === 'first' || prop === 'run' || prop === 'all' || prop === 'raw') {
          return (...args: unknown[]) => roundTrip(() => value.apply(target, args));
        }
        return value.bind(target);
      },
    });
  const wrap = <D extends object>(inner: D): D =>
    new Proxy(inner, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (typeof value !== 'function') return value;
        if (prop === 'prepare') return (sql: string) => statement(value.call(target, sql));
        if (prop === 'batch' || prop === 'exec')
          return (...args: unknown[]) => roundTrip(() => value.apply(target, args));
        if (prop === 'withSession') return (...args: unknown[]) => wrap(value.apply(target, args));
        return value.bind(target);
      },
    });
  return wrap(db);
}

/** Wraps a D1 binding and counts its round trips (see interceptDb). */
export function countingDb(db: D1Database): { db: D1Database; calls: () => number } {
  let calls = 0;
  return {
    db: interceptDb(db, (run) => {
      calls++;
      return run();
    }),
    calls: () => calls,
  };
}

/** What the faulty binding does on one call: fail before running, run and then lose the reply, or run. */
export type Fault = { before: string } | { after: string } | null;

/** A D1 binding that injects `faults[n]` into its n-th round trip; calls past the list run normally. */
export function faultyDb(faults: Fault[]) {
  let calls = 0;
  const db = interceptDb(env.DB, async (run) => {
    const fault = faults[calls++] ?? null;
    if (fault !== null && 'before' in fault) throw new Error(fault.before);
    const result = await run();
    if (fault !== null && 'after' in fault) throw new Error(fault.after);
    return result;
  });
  return { db, calls: () => calls };
}

// ---- events and deliveries --------------------------------------------------------------------

export const EVENT_URL = `${ORIGIN}/v1.0/platform/nft/event`;
export const SECRET_URL = `${URL_}/secret`;
export const DELIVERIES_QUEUE = 'nft-webhook-deliveries';
export const EVENTS_QUEUE = 'nft-webhook-events';

/** A platform service's token: it may publish events. */
export const platformToken = (claims: Record<string, unknown> = {}) =>
  tokenFor('platform-service', { scope: 'events:publish', ...claims });

export const eventRequest = (body: unknown, headers: Record<string, string>) =>
  new Request(EVENT_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** A queue producer that keeps what is sent to it. */
export function fakeQueue() {
  const sent: unknown[] = [];
  return {
    sent,
    binding: {
      send: async (body: unknown) => {
        sent.push(body);
      },
      sendBatch: async (messages: Iterable<{ body: unknown }>) => {
        for (const m of messages) sent.push(m.body);
      },
    } as unknown as Queue,
  };
}

/**
 * Calls the Worker's fetch with some bindings changed, and waits for the work it left running
 * after the reply (waitUntil: queueing deliveries).
 */
export async function fetchAndWait(overrides: Record<string, unknown>, request: Request): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    request as Request<unknown, IncomingRequestCfProperties>,
    { ...env, ...overrides } as CloudflareBindings,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

let messageSeq = 0;

/** Runs the Worker's queue consumer on a batch of `bodies` (from `queue`) and returns what it did with them. */
export async function consume(
  queue: string,
  bodies: unknown[],
  overrides: Record<string, unknown> = {},
  { attempts = 1, ids }: { attempts?: number; ids?: string[] } = {},
) {
  const messages = bodies.map((body, i) => ({
    id: ids?.[i] ?? `msg-${++messageSeq}`,
    timestamp: new Date(),
    attempts,
    body,
  }));
  const batch = createMessageBatch(queue, messages);
  // getQueueResult does not report a retry's delay: the calls themselves are watched.
  const retries: Record<string, number | undefined> = {};
  for (const m of batch.messages) {
    const retry = m.retry.bind(m);
    m.retry = (options?: QueueRetryOptions) => {
      retries[m.id] = options?.delaySeconds;
      retry(options);
    };
  }
  const ctx = createExecutionContext();
  await worker.queue(batch, { ...env, ...overrides } as CloudflareBindings);
  return { result: await getQueueResult(batch, ctx), ids: messages.map((m) => m.id), retries };
}

/** What a receiver saw of one request. */
export interface Received {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  redirect: string | undefined;
}

/**
 * Replaces the runtime's fetch (what the consumer calls) with `reply`, and keeps every request.
 * `reply` may return a Response, a promise of one, or throw.
 */
export function receiver(reply: (req: Received, n: number) => Response | Promise<Response> = () => new Response('ok')) {
  const requests: Received[] = [];
  const spy = vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const req = new Request(input as RequestInfo, init as RequestInit);
    const received: Received = {
      url: req.url,
      method: req.method,
      headers: Object.fromEntries(req.headers),
      body: await req.text(),
      redirect: (init as RequestInit | undefined)?.redirect,
    };
    requests.push(received);
    return reply(received, requests.length);
  });
  return { requests, spy };
}

/** A webhook registered through the API (at `https://<app>.example.com/hook` unless `body` says): its id and secret. */
export async function registerWebhook(app: string, body: Record<string, unknown> = {}) {
  const { value } = await expectValue<{ webhook_id: number; secret: string }>(
    await post({ url: `https://${app}.example.com/hook`, ...body }, bearer(await tokenFor(app))),
    201,
  );
  return { id: String(value.webhook_id), secret: value.secret };
}

/** Publishes an event for `app` with a platform token; returns its id and the deliveries it queued. */
export async function publishEvent(app: string, type = 'NEW_NFT', data: Record<string, unknown> = { token: '1' }) {
  const queue = fakeQueue();
  const res = await fetchAndWait(
    { DELIVERIES: queue.binding },
    eventRequest({ app_id: app, type, data }, bearer(await platformToken())),
  );
  const { value } = await expectValue<{ event_id: string }>(res, 202);
  return { eventId: value.event_id, deliveryIds: queue.sent.map((m) => (m as { delivery_id: string }).delivery_id) };
}

/** Runs the deliveries consumer on these deliveries' messages. */
export const deliver = (ids: string[], overrides: Record<string, unknown> = {}) =>
  consume(
    DELIVERIES_QUEUE,
    ids.map((delivery_id) => ({ delivery_id })),
    overrides,
  );
