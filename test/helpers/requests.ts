// Requests to the Worker: its addresses, one helper per method, its entry point with other bindings.
import { createExecutionContext, env, runInDurableObject, SELF, waitOnExecutionContext } from 'cloudflare:test';
import { afterEach } from 'vitest';
import worker from '../../src/index';
import { webhooksOf } from './database';
import { deliveriesOfEvent, endpointOf } from './objects';
import { expectValue } from './replies';
import { bearer, platformToken, tokenFor } from './tokens';

export const PATH = '/v1.0/app/nft/webhook';
export const ORIGIN = 'https://webhooks.test';
export const URL_ = ORIGIN + PATH;

/**
 * The body limits the docs promise: 8 KiB for a webhook's (16 KiB for POST and PATCH, room for a
 * filter of 8 KiB), 64 KiB for an event's.
 */
export const MAX_BODY_BYTES = 8192;
export const MAX_WEBHOOK_BODY_BYTES = 16384;
export const MAX_EVENT_BYTES = 65536;

export const EVENT_URL = `${ORIGIN}/v1.0/platform/nft/event`;
export const SECRET_URL = `${URL_}/secret`;
export const LOG_URL = `${URL_}/delivery`;

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
 * Calls the Worker's fetch with some bindings changed, and waits for the work it left running
 * after the reply (waitUntil).
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

export const eventRequest = (body: unknown, headers: Record<string, string>) =>
  new Request(EVENT_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/**
 * A webhook registered through the API (at `https://<app>.example.com/hook` unless `body` says, or
 * gives a `destination`, which has no URL): its id and secret.
 */
export async function registerWebhook(app: string, body: Record<string, unknown> = {}) {
  const sent = body.destination === undefined ? { url: `https://${app}.example.com/hook`, ...body } : body;
  const { value } = await expectValue<{ webhook_id: number; secret: string }>(
    await post(sent, bearer(await tokenFor(app))),
    201,
  );
  return { id: String(value.webhook_id), secret: value.secret };
}

/**
 * For a test file whose tests leave deliveries pending: `register` is registerWebhook remembering
 * the webhook, and after each test the objects of the webhooks in `used` (add others to it) stop
 * their alarms, so that none retries during the next test.
 */
export function stoppedAfterEachTest() {
  const used = new Set<string>();
  afterEach(async () => {
    for (const id of used) await runInDurableObject(endpointOf(id), (_, state) => state.storage.deleteAlarm());
    used.clear();
  });
  const register = async (app: string, body: Record<string, unknown> = {}) => {
    const hook = await registerWebhook(app, body);
    used.add(hook.id);
    return hook;
  };
  return { used, register };
}

/**
 * Publishes an event for `app` with a platform token; returns its id and the deliveries it made
 * (found at the endpoints of the application's webhooks, as D1 lists them).
 */
export async function publishEvent(app: string, type = 'NEW_NFT', data: Record<string, unknown> = { token: '1' }) {
  const res = await fetchAndWait({}, eventRequest({ app_id: app, type, data }, bearer(await platformToken())));
  const { value } = await expectValue<{ event_id: string }>(res, 202);
  const deliveryIds: string[] = [];
  for (const hook of await webhooksOf(app))
    deliveryIds.push(...(await deliveriesOfEvent(hook.webhook_id, value.event_id)));
  return { eventId: value.event_id, deliveryIds };
}

/** Publishes an event of `type` (data `{}`) for `app`; returns the ids of the deliveries it made. */
export const publishDeliveries = async (app: string, type = 'NEW_NFT') =>
  (await publishEvent(app, type, {})).deliveryIds;

/** A GET of a webhook's signing secret, with a raw query string. */
export const secretRequest = (query: string, headers: Record<string, string>) =>
  new Request(`${SECRET_URL}?${query}`, { headers });

/** GET of the delivery log with a raw query string. */
export const readLog = (query: string, headers: Record<string, string>, overrides: Record<string, unknown> = {}) =>
  fetchAndWait(overrides, new Request(`${LOG_URL}?${query}`, { headers }));

/**
 * POST of `body` (a string as it is, anything else as JSON) to `/v1.0/app/nft/webhook/<path>`
 * (`test`, `recover`, `secret`, `delivery/resend`).
 */
export const postJson = (
  path: string,
  body: unknown,
  headers: Record<string, string>,
  overrides: Record<string, unknown> = {},
) =>
  fetchAndWait(
    overrides,
    new Request(`${ORIGIN}/v1.0/app/nft/webhook/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  ).then((res) => ({ res }));
