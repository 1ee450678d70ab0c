// Sending deliveries: an endpoint's object (src/deliveries/endpoint.ts) sends its due deliveries from
// its alarm, or when deliverDue() asks, and records attempts and states in its own storage and the
// webhook's health in D1.
import { env, runInDurableObject } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { auditRows, countingDb, insertWebhook } from './helpers/database';
import { deliverDue, endpointOf, endpointSql, makeDue, storedAttempts, storedDelivery } from './helpers/objects';
import { consume } from './helpers/queues';
import { type Received, receiver } from './helpers/receiver';
import { expectValue, type Webhook } from './helpers/replies';
import { del, fetchAndWait, get, publishEvent, put, stoppedAfterEachTest } from './helpers/requests';
import { hoursAgo } from './helpers/time';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

/** Webhooks registered here (and any added to `used`) stop their objects' alarms when a test ends. */
const { used, register } = stoppedAfterEachTest();

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * The receiver at `host` (by default `reply` answers 200 ok): its requests, in order. Requests to
 * other hosts (another test's object, still at work) are answered 503 and not kept.
 */
function receiverAt(
  host: string,
  reply: (req: Received, n: number) => Response | Promise<Response> = () => new Response('ok'),
) {
  const requests: Received[] = [];
  receiver((req) => {
    if (new URL(req.url).host !== host) return new Response(null, { status: 503 });
    requests.push(req);
    return reply(req, requests.length);
  });
  return { requests };
}

const hostOf = (app: string) => `${app}.example.com`;

const DEFAULT_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000];

const hookRow = (id: string) =>
  env.DB.prepare('SELECT is_enabled, failing_since, secret FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)')
    .bind(id)
    .first<{ is_enabled: number; failing_since: string | null; secret: string | null }>();

/**
 * Gives the endpoint's object the test settings with `overrides` from now on (none: the test
 * settings again), as a deploy with those settings would. Its alarm and deliverDue() both use them.
 */
const OWN = Symbol("the object's own env");
const useSettings = (
  hookId: string,
  overrides: Record<string, unknown> | ((own: CloudflareBindings) => Record<string, unknown>) = {},
) =>
  runInDurableObject(endpointOf(hookId), (instance) => {
    const object = instance as unknown as { env: CloudflareBindings; [OWN]?: CloudflareBindings };
    object[OWN] ??= object.env;
    const own = object[OWN];
    object.env = { ...own, ...(typeof overrides === 'function' ? overrides(own) : overrides) } as CloudflareBindings;
  });

/** Settings the object refuses: its deliveries wait, untouched, without a request. */
const HOLD = { DELIVERY_RETRY_SCHEDULE: '5s 13h' };

/** When the endpoint's alarm rings next (ms), or null. */
const alarmOf = (hookId: string) => runInDurableObject(endpointOf(hookId), (_, state) => state.storage.getAlarm());

/** The wait between a delivery's last attempt and its next one (ms). */
async function waitAfterLast(hookId: string, id: string) {
  const row = (await storedDelivery(hookId, id))!;
  return Date.parse(row.next_attempt_at!) - Date.parse(row.last_attempt_at!);
}

/** Publishes an event for `app` whose one webhook is `hookId`; returns its one delivery's id. */
async function publishOne(app: string) {
  const { deliveryIds } = await publishEvent(app);
  expect(deliveryIds).toHaveLength(1);
  return deliveryIds[0]!;
}

describe('sending deliveries: one attempt', () => {
  it('POSTs the exact stored bytes, signed so that the standardwebhooks package verifies them', async () => {
    const app = freshApp();
    const hook = await register(app);
    const { requests } = receiverAt(hostOf(app), () => new Response('thanks'));
    const { eventId, deliveryIds } = await publishEvent(app, 'MOD_NFT', { token_id: '42', price: 1.5 });
    await deliverDue(hook.id);

    expect(requests).toHaveLength(1);
    const [req] = requests;
    const { payload } = (await storedDelivery(hook.id, deliveryIds[0]!))!;
    expect(req!.url).toBe(`https://${app}.example.com/hook`);
    expect(req!.method).toBe('POST');
    expect(req!.body).toBe(payload);
    expect(JSON.parse(req!.body)).toEqual({
      type: 'MOD_NFT',
      timestamp: expect.any(String),
      data: { token_id: '42', price: 1.5 },
    });
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['user-agent']).toMatch(/^nft-webhook-api\//);
    expect(req!.headers['webhook-id']).toBe(eventId);
    expect(Math.abs(Number(req!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
    expect(req!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(req!.redirect).toBe('manual');
    // The reference implementation of the specification verifies it with the webhook's secret...
    expect(new StandardWebhook(hook.secret).verify(req!.body, req!.headers)).toEqual(JSON.parse(payload));
    // ...and refuses it with another secret or another body.
    const other = (await register(freshApp())).secret;
    expect(() => new StandardWebhook(other).verify(req!.body, req!.headers)).toThrow();
    expect(() => new StandardWebhook(hook.secret).verify(`${req!.body} `, req!.headers)).toThrow();

    expect(await storedDelivery(hook.id, deliveryIds[0]!)).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      next_attempt_at: null,
      last_status: 200,
      last_error: null,
    });
    expect(await storedAttempts(hook.id, deliveryIds[0]!)).toEqual([
      {
        attempt: 1,
        attempted_at: expect.any(String),
        status: 200,
        error: null,
        duration_ms: expect.any(Number),
        body: 'thanks',
      },
    ]);
  });

  it('keeps the first 1 KiB of the reply and cancels the rest unread', async () => {
    const app = freshApp();
    const hook = await register(app);
    let pulled = 0;
    let cancelled = false;
    receiverAt(
      hostOf(app),
      () =>
        new Response(
          new ReadableStream({
            pull(controller) {
              pulled++;
              if (pulled > 1000) controller.close();
              else controller.enqueue(new TextEncoder().encode('é'.repeat(300)));
            },
            cancel() {
              cancelled = true;
            },
          }),
          { status: 202 },
        ),
    );
    const id = await publishOne(app);
    await deliverDue(hook.id);
    const [recorded] = await storedAttempts(hook.id, id);
    expect(new TextEncoder().encode(recorded!.body!).byteLength).toBe(1024);
    expect(recorded!.body).toBe('é'.repeat(512));
    expect(cancelled).toBe(true);
    expect(pulled).toBeLessThan(10);
    expect((await storedDelivery(hook.id, id))?.status).toBe('succeeded');
  });

  it('makes a webhook registered before secrets existed a secret, atomically, and signs with it', async () => {
    const app = freshApp();
    const legacy = await insertWebhook(app, { url: 'https://legacy.example.com/h' });
    used.add(legacy);
    expect((await hookRow(legacy))?.secret).toBeNull();
    const { requests } = receiverAt('legacy.example.com');
    await publishOne(app);
    await deliverDue(legacy);
    expect(requests).toHaveLength(1);
    expect((await hookRow(legacy))?.secret).not.toBeNull();
    const { value } = await expectValue<{ secret: string }>(
      await fetchAndWait(
        {},
        new Request(`https://webhooks.test/v1.0/app/nft/webhook/secret?webhook_id=${legacy}`, {
          headers: bearer(await tokenFor(app)),
        }),
      ),
    );
    expect(new StandardWebhook(value.secret).verify(requests[0]!.body, requests[0]!.headers)).toBeTruthy();
  });
});

/**
 * A webhook of a fresh application whose object has the test settings with `overrides`, an event
 * published to it and its sending run once, with console.error watched: the spy, the webhook, the
 * receiver's requests, the delivery's id, and the time just before the sending.
 */
async function sendOnceUnder(overrides: Record<string, unknown>) {
  const error = vi.spyOn(console, 'error').mockImplementation(() => {});
  const app = freshApp();
  const hook = await register(app);
  await useSettings(hook.id, overrides);
  const { requests } = receiverAt(hostOf(app));
  const id = await publishOne(app);
  const before = Date.now();
  await deliverDue(hook.id);
  return { error, hook, requests, id, before };
}

/**
 * Publishes two events for `app` while its endpoint `hookId` is held (HOLD) and runs a pass, which
 * sends nothing; then gives the object the test settings again and makes both deliveries due.
 * Their ids, in order.
 */
async function publishHeldThenDue(app: string, hookId: string): Promise<[string, string]> {
  const a = await publishOne(app);
  const b = await publishOne(app);
  await deliverDue(hookId);
  await useSettings(hookId);
  await makeDue(hookId, a);
  await makeDue(hookId, b);
  return [a, b];
}

describe('sending deliveries: failures and retries', () => {
  it('retries on the schedule: after failed attempt N the delay is the Nth, then the delivery fails', async () => {
    const app = freshApp();
    const hook = await register(app);
    const { requests } = receiverAt(hostOf(app), () => new Response('nope', { status: 500 }));
    const { eventId, deliveryIds } = await publishEvent(app);
    const id = deliveryIds[0]!;
    for (let n = 1; n <= DEFAULT_SCHEDULE.length + 1; n++) {
      // The first attempt is the alarm's; each next one is made due now.
      if (n > 1) await makeDue(hook.id, id);
      await deliverDue(hook.id);
      const row = await storedDelivery(hook.id, id);
      if (n <= DEFAULT_SCHEDULE.length) {
        expect(row, `attempt ${n}`).toMatchObject({ status: 'pending', attempts: n, last_status: 500 });
        expect(await waitAfterLast(hook.id, id), `attempt ${n}`).toBe(DEFAULT_SCHEDULE[n - 1]! * 1000);
      } else {
        expect(row).toMatchObject({ status: 'failed', attempts: n, next_attempt_at: null });
      }
    }
    // The same webhook-id in every attempt.
    expect(requests).toHaveLength(8);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([eventId]));
    expect((await storedAttempts(hook.id, id)).map((a) => [a.attempt, a.status])).toEqual(
      Array.from({ length: 8 }, (_, i) => [i + 1, 500]),
    );
  });

  it('follows DELIVERY_RETRY_SCHEDULE', async () => {
    const app = freshApp();
    const hook = await register(app);
    await useSettings(hook.id, { DELIVERY_RETRY_SCHEDULE: '7s 1m' });
    receiverAt(hostOf(app), () => new Response(null, { status: 500 }));
    const id = await publishOne(app);
    await deliverDue(hook.id);
    expect(await waitAfterLast(hook.id, id)).toBe(7000);
    await makeDue(hook.id, id);
    await deliverDue(hook.id);
    expect(await waitAfterLast(hook.id, id)).toBe(60_000);
    await makeDue(hook.id, id);
    await deliverDue(hook.id);
    expect(await storedDelivery(hook.id, id)).toMatchObject({ status: 'failed', attempts: 3, next_attempt_at: null });
  });

  it.each([
    [429, '3600', 3600],
    [503, '60', 60],
    [502, '2', 5],
    [504, '999999', 43200],
    [503, '10000000000', 43200],
    [429, '99999999999999999999', 43200],
    [429, 'soon', 5],
    [500, '3600', 5],
  ])('after a %i with Retry-After: %s, waits %i s', async (status, header, wait) => {
    const app = freshApp();
    const hook = await register(app);
    receiverAt(hostOf(app), () => new Response(null, { status, headers: { 'retry-after': header } }));
    const id = await publishOne(app);
    await deliverDue(hook.id);
    expect(await storedDelivery(hook.id, id)).toMatchObject({ status: 'pending', last_status: status });
    expect(await waitAfterLast(hook.id, id)).toBe(wait * 1000);
    // The object wakes for it then.
    expect(await alarmOf(hook.id)).toBe(Date.parse((await storedDelivery(hook.id, id))!.next_attempt_at!));
  });

  it('reads Retry-After as an HTTP date too', async () => {
    const app = freshApp();
    const hook = await register(app);
    receiverAt(
      hostOf(app),
      () =>
        new Response(null, { status: 503, headers: { 'retry-after': new Date(Date.now() + 600_000).toUTCString() } }),
    );
    const id = await publishOne(app);
    await deliverDue(hook.id);
    const wait = (await waitAfterLast(hook.id, id)) / 1000;
    expect(wait).toBeGreaterThan(590);
    expect(wait).toBeLessThanOrEqual(600);
  });

  it('does not follow redirects: a 3xx is a failed attempt', async () => {
    const app = freshApp();
    const hook = await register(app);
    const { requests } = receiverAt(
      hostOf(app),
      () => new Response(null, { status: 302, headers: { location: 'https://elsewhere.example.com/' } }),
    );
    const id = await publishOne(app);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.redirect).toBe('manual');
    expect(await storedDelivery(hook.id, id)).toMatchObject({ status: 'pending', last_status: 302, attempts: 1 });
  });

  it('ends an attempt that takes longer than DELIVERY_TIMEOUT_SECONDS as a timeout', async () => {
    const app = freshApp();
    const hook = await register(app);
    await useSettings(hook.id, { DELIVERY_TIMEOUT_SECONDS: '1' });
    receiverAt(hostOf(app), () => new Promise<Response>(() => {}));
    const started = Date.now();
    const id = await publishOne(app);
    await deliverDue(hook.id);
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
    expect(await storedDelivery(hook.id, id)).toMatchObject({
      status: 'pending',
      last_status: null,
      last_error: 'timeout',
    });
    const [recorded] = await storedAttempts(hook.id, id);
    expect(recorded).toMatchObject({ status: null, error: 'timeout' });
    expect(recorded!.duration_ms).toBeGreaterThanOrEqual(990);
  });

  it('counts a reply whose body does not arrive in time as a timeout too', async () => {
    const app = freshApp();
    const hook = await register(app);
    await useSettings(hook.id, { DELIVERY_TIMEOUT_SECONDS: '1' });
    receiverAt(hostOf(app), () => new Response(new ReadableStream({ pull: () => new Promise(() => {}) })));
    const id = await publishOne(app);
    await deliverDue(hook.id);
    expect(await storedDelivery(hook.id, id)).toMatchObject({ last_error: 'timeout' });
  });

  it('records a connection failure, and a TLS failure', async () => {
    const app = freshApp();
    const hook = await register(app);
    receiverAt(hostOf(app), (_, n) =>
      Promise.reject(new Error(n === 1 ? 'Network connection lost.' : 'TLS peer certificate is not trusted')),
    );
    const a = await publishOne(app);
    await deliverDue(hook.id);
    const b = await publishOne(app);
    await deliverDue(hook.id);
    expect((await storedDelivery(hook.id, a))?.last_error).toBe('connection');
    expect((await storedDelivery(hook.id, b))?.last_error).toBe('tls');
  });

  it('never requests a URL that the rules refuse now, and records url_refused', async () => {
    const app = freshApp();
    const { id } = await register(app);
    // Rules may have tightened since it was registered (or a row was written by hand).
    await env.DB.prepare('UPDATE webhooks SET url = ?2 WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(id, 'https://10.0.0.1/internal')
      .run();
    const { requests } = receiverAt('10.0.0.1');
    const deliveryId = await publishOne(app);
    await deliverDue(id);
    expect(requests).toHaveLength(0);
    expect(await storedDelivery(id, deliveryId)).toMatchObject({
      status: 'pending',
      last_error: 'url_refused',
      attempts: 1,
    });
  });

  it('requests an origin that WEBHOOK_URL_ALLOWED_ORIGINS names although the rules refuse it', async () => {
    const app = freshApp();
    const local = { WEBHOOK_URL_ALLOWED_ORIGINS: 'http://127.0.0.1:8790' };
    const res = await fetchAndWait(
      local,
      new Request('https://webhooks.test/v1.0/app/nft/webhook', {
        method: 'POST',
        headers: { ...bearer(await tokenFor(app)), 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'http://127.0.0.1:8790/hook' }),
      }),
    );
    const hook = String((await expectValue<{ webhook_id: number }>(res, 201)).value.webhook_id);
    used.add(hook);
    await useSettings(hook, local);
    const { requests } = receiverAt('127.0.0.1:8790');
    const first = await publishOne(app);
    await deliverDue(hook);
    expect(requests.map((r) => r.url)).toEqual(['http://127.0.0.1:8790/hook']);
    expect((await storedDelivery(hook, first))?.status).toBe('succeeded');
    // Without the setting, the same URL is refused at delivery.
    await useSettings(hook);
    const again = await publishOne(app);
    await deliverDue(hook);
    expect(requests).toHaveLength(1);
    expect((await storedDelivery(hook, again))?.last_error).toBe('url_refused');
  });

  it('waits, without a request, while WEBHOOK_SECRET_KEY is missing, and says so in the log', async () => {
    const { error, hook, requests, id, before } = await sendOnceUnder({ WEBHOOK_SECRET_KEY: '' });
    expect(requests).toHaveLength(0);
    const row = await storedDelivery(hook.id, id);
    expect(row).toMatchObject({ status: 'pending', attempts: 0, last_attempt_at: null });
    // It waits a minute, then is tried again.
    const wait = Date.parse(row!.next_attempt_at!) - before;
    expect(wait).toBeGreaterThan(55_000);
    expect(wait).toBeLessThanOrEqual(61_000);
    expect(await storedAttempts(hook.id, id)).toEqual([]);
    expect(error.mock.calls.some((c) => String(c[0]).includes('WEBHOOK_SECRET_KEY'))).toBe(true);
  });

  it('waits while the delivery settings are invalid, and names the setting in the log', async () => {
    const { error, hook, requests, id, before } = await sendOnceUnder({ DELIVERY_RETRY_SCHEDULE: '5s 13h' });
    expect(requests).toHaveLength(0);
    expect(await storedDelivery(hook.id, id)).toMatchObject({ status: 'pending', attempts: 0, last_attempt_at: null });
    // The object comes back in a minute.
    const alarm = (await alarmOf(hook.id))!;
    expect(alarm - before).toBeGreaterThan(55_000);
    expect(alarm - before).toBeLessThanOrEqual(61_000);
    expect(error.mock.calls.some((c) => String(c[0]).includes('DELIVERY_RETRY_SCHEDULE'))).toBe(true);
    // Fixed, it sends.
    await useSettings(hook.id);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    expect((await storedDelivery(hook.id, id))?.status).toBe('succeeded');
  });
});

describe('sending deliveries: webhooks that change, and dead endpoints', () => {
  it('cancels a delivery whose webhook was disabled or deleted meanwhile, without a request', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const off = await register(app);
    const gone = await register(app, { url: `https://${app}.example.com/gone` });
    await useSettings(off.id, HOLD);
    await useSettings(gone.id, HOLD);
    const { requests } = receiverAt(hostOf(app));
    const { deliveryIds } = await publishEvent(app);
    expect(deliveryIds).toHaveLength(2);
    await deliverDue(off.id, gone.id);
    await put({ webhook_id: off.id, is_enabled: false }, headers);
    await del(`webhook_id=${gone.id}`, headers);
    await useSettings(off.id);
    await useSettings(gone.id);
    const [a, b] = deliveryIds as [string, string];
    const offId = (await storedDelivery(off.id, a)) ? a : b;
    const goneId = offId === a ? b : a;
    await makeDue(off.id, offId);
    await makeDue(gone.id, goneId);
    await deliverDue(off.id, gone.id);
    expect(requests).toHaveLength(0);
    expect(await storedDelivery(off.id, offId)).toMatchObject({
      status: 'cancelled',
      next_attempt_at: null,
      attempts: 0,
    });
    expect(await storedDelivery(gone.id, goneId)).toMatchObject({
      status: 'cancelled',
      next_attempt_at: null,
      attempts: 0,
    });
    // Nothing is left to send: the objects wake no sooner than for the hourly retention.
    for (const id of [off.id, gone.id]) expect((await alarmOf(id)) ?? Infinity).toBeGreaterThan(Date.now() + 3_000_000);
  });

  it('disables a webhook that answers 410 Gone at once, with an audit record by the system', async () => {
    const app = freshApp();
    const hook = await register(app);
    receiverAt(hostOf(app), () => new Response('gone', { status: 410 }));
    const id = await publishOne(app);
    await deliverDue(hook.id);
    expect(await storedDelivery(hook.id, id)).toMatchObject({
      status: 'failed',
      last_status: 410,
      next_attempt_at: null,
      attempts: 1,
    });
    expect((await hookRow(hook.id))?.is_enabled).toBe(0);
    const audit = await auditRows(hook.id);
    expect(audit.map((a) => [a.action, a.actor])).toEqual([
      ['create', app],
      ['disable', 'system'],
    ]);
    expect(audit[1]!.request_id).toBe(`delivery:${id}`);
    const reason = await env.DB.prepare(
      "SELECT reason FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER) AND action = 'disable'",
    )
      .bind(hook.id)
      .first('reason');
    expect(reason).toBe('the endpoint answered 410 Gone');
    expect(JSON.parse(audit[1]!.row_before)).toMatchObject({ is_enabled: 1 });
    // The webhook says why and since when: its 410, at the attempt's time.
    const attempt = (await storedAttempts(hook.id, id))[0];
    const gone = await expectValue<Webhook>(await get(`webhook_id=${hook.id}`, bearer(await tokenFor(app))));
    expect(gone.value).toMatchObject({ is_enabled: false, disabled_reason: 'gone' });
    expect(Date.parse(gone.value.disabled_at!) - Date.parse(String(attempt?.attempted_at))).toBeGreaterThanOrEqual(0);
    expect(Date.parse(gone.value.disabled_at!)).toBeGreaterThan(Date.now() - 60_000);
    // The application turns it on again with PUT: no reason any more.
    const res = await put({ webhook_id: hook.id, is_enabled: true }, bearer(await tokenFor(app)));
    expect(res.status).toBe(200);
    expect((await hookRow(hook.id))?.is_enabled).toBe(1);
    const enabled = await expectValue<Webhook>(await get(`webhook_id=${hook.id}`, bearer(await tokenFor(app))));
    expect(enabled.value).toMatchObject({ is_enabled: true, disabled_reason: null, disabled_at: null });
  });

  it('writes one audit record when several deliveries of one webhook get 410 in a pass', async () => {
    const app = freshApp();
    const hook = await register(app);
    await useSettings(hook.id, HOLD);
    const { requests } = receiverAt(hostOf(app), () => new Response(null, { status: 410 }));
    await publishHeldThenDue(app, hook.id);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(2);
    const disables = (await auditRows(hook.id)).filter((r) => r.action === 'disable');
    expect(disables).toHaveLength(1);
    expect(disables[0]?.actor).toBe('system');
    expect((await hookRow(hook.id))?.is_enabled).toBe(0);
  });

  it('disables a webhook whose attempts all failed for AUTO_DISABLE_AFTER_HOURS, at least twice 12 h apart', async () => {
    const app = freshApp();
    const hook = await register(app);
    receiverAt(hostOf(app), () => new Response(null, { status: 500 }));
    const failSince = async (h: number) => {
      const at = hoursAgo(h);
      await env.DB.prepare('UPDATE webhooks SET failing_since = ?2 WHERE webhook_id = CAST(?1 AS INTEGER)')
        .bind(hook.id, at)
        .run();
      return at;
    };
    const failOnce = async () => {
      await publishOne(app);
      await deliverDue(hook.id);
    };

    // The first failure starts the clock.
    await failOnce();
    const since = (await hookRow(hook.id))?.failing_since;
    expect(Date.now() - Date.parse(since!)).toBeLessThan(5000);
    // Not yet 120 hours.
    await failSince(119);
    await failOnce();
    expect((await hookRow(hook.id))?.is_enabled).toBe(1);
    // With a shorter setting, still two failures 12 hours apart are needed.
    await failSince(11);
    await useSettings(hook.id, { AUTO_DISABLE_AFTER_HOURS: '1' });
    await failOnce();
    expect((await hookRow(hook.id))?.is_enabled).toBe(1);
    await useSettings(hook.id);
    const first = await failSince(121);
    await failOnce();
    expect((await hookRow(hook.id))?.is_enabled).toBe(0);
    const reason = await env.DB.prepare(
      "SELECT actor, reason FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER) AND action = 'disable'",
    )
      .bind(hook.id)
      .first();
    expect(reason).toEqual({ actor: 'system', reason: `every attempt failed since ${first}` });
    // The webhook says why, since when it was failing, and when it was disabled.
    const failing = await expectValue<Webhook>(await get(`webhook_id=${hook.id}`, bearer(await tokenFor(app))));
    expect(failing.value).toMatchObject({ is_enabled: false, disabled_reason: 'failing', failing_since: first });
    expect(Date.parse(failing.value.disabled_at!)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('a success clears the failure clock', async () => {
    const app = freshApp();
    const hook = await register(app);
    await env.DB.prepare('UPDATE webhooks SET failing_since = ?2 WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(hook.id, hoursAgo(200))
      .run();
    receiverAt(hostOf(app));
    await publishOne(app);
    await deliverDue(hook.id);
    expect(await hookRow(hook.id)).toMatchObject({ is_enabled: 1, failing_since: null });
  });

  it('starts the failure clock afresh when the application enables the webhook again', async () => {
    const app = freshApp();
    const hook = await register(app);
    const headers = bearer(await tokenFor(app));
    await env.DB.prepare('UPDATE webhooks SET is_enabled = 0, failing_since = ?2 WHERE webhook_id = ?1')
      .bind(hook.id, hoursAgo(200))
      .run();
    expect((await put({ webhook_id: hook.id, is_enabled: true }, headers)).status).toBe(200);
    expect(await hookRow(hook.id)).toMatchObject({ is_enabled: 1, failing_since: null });
    receiverAt(hostOf(app), () => new Response(null, { status: 500 }));
    await publishOne(app);
    await deliverDue(hook.id);
    // One failure after re-enabling does not disable it again.
    expect((await hookRow(hook.id))?.is_enabled).toBe(1);
    expect((await hookRow(hook.id))?.failing_since).not.toBeNull();
  });
});

describe('sending deliveries: passes', () => {
  it('sends ten due deliveries of an endpoint in one pass that reads D1 once, with at most six requests open at once', async () => {
    const app = freshApp();
    const hook = await register(app);
    await useSettings(hook.id, HOLD);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await publishOne(app));
    await deliverDue(hook.id);
    let open = 0;
    let most = 0;
    const { requests } = receiverAt(hostOf(app), async () => {
      open++;
      most = Math.max(most, open);
      await new Promise((r) => setTimeout(r, 20));
      open--;
      return new Response('ok');
    });
    let counted: ReturnType<typeof countingDb> | undefined;
    await useSettings(hook.id, (own) => {
      counted = countingDb(own.DB);
      return { DB: counted.db };
    });
    for (const id of ids) await makeDue(hook.id, id);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(10);
    expect(most).toBe(6);
    // One read of the webhook, and nothing written: it was healthy and stays so.
    expect(counted?.calls()).toBe(1);
    for (const id of ids) expect((await storedDelivery(hook.id, id))?.status).toBe('succeeded');
  });

  it('attempts a delivery once when two passes are asked for at once, and never again once it ended', async () => {
    const app = freshApp();
    const hook = await register(app);
    await useSettings(hook.id, HOLD);
    // A receiver slow enough that the second pass is asked for while the first one's request is open.
    const { requests } = receiverAt(hostOf(app), async () => {
      await new Promise((r) => setTimeout(r, 100));
      return new Response('ok');
    });
    const id = await publishOne(app);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(0);
    await useSettings(hook.id);
    await makeDue(hook.id, id);
    await Promise.all([endpointOf(hook.id).deliverDue(), endpointOf(hook.id).deliverDue()]);
    expect(requests).toHaveLength(1);
    expect((await storedDelivery(hook.id, id))?.status).toBe('succeeded');
    // Ended: made due again, it is not attempted.
    await makeDue(hook.id, id);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    expect(await storedAttempts(hook.id, id)).toHaveLength(1);
  });

  it('does not attempt a delivery before it is due, and wakes for it then', async () => {
    const app = freshApp();
    const hook = await register(app);
    await useSettings(hook.id, HOLD);
    const id = await publishOne(app);
    await deliverDue(hook.id);
    await useSettings(hook.id);
    const due = new Date(Date.now() + 120_000).toISOString();
    await endpointSql(
      hook.id,
      'UPDATE deliveries SET next_attempt_at = ?2 WHERE delivery_id = CAST(?1 AS INTEGER)',
      id,
      due,
    );
    const { requests } = receiverAt(hostOf(app));
    await deliverDue(hook.id);
    expect(requests).toHaveLength(0);
    expect(await storedDelivery(hook.id, id)).toMatchObject({ status: 'pending', attempts: 0, next_attempt_at: due });
    expect(await alarmOf(hook.id)).toBe(Date.parse(due));
  });

  it('consumes no deliveries queue: a batch from it (a queue the release before used) is retried, never sent', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const { spy } = receiver();
    const { result } = await consume('nft-webhook-deliveries', [{ delivery_id: '999999999' }, 'x']);
    expect(spy).not.toHaveBeenCalled();
    expect(result.ackAll).toBe(false);
    expect(result.retryBatch).toMatchObject({ retry: true });
    expect(error.mock.calls.some((c) => String(c[0]).includes('a queue this Worker does not consume'))).toBe(true);
  });

  it('records what it can when something unexpected breaks one delivery: the others are not held back', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    const hook = await register(app);
    await useSettings(hook.id, HOLD);
    const [a, b] = await publishHeldThenDue(app, hook.id);
    const { requests } = receiverAt(hostOf(app));
    // The first signature of the pass breaks.
    const sign = crypto.subtle.sign.bind(crypto.subtle);
    let signed = 0;
    vi.spyOn(crypto.subtle, 'sign').mockImplementation((...args: Parameters<SubtleCrypto['sign']>) => {
      if (++signed === 1) throw new TypeError('unexpected');
      return sign(...args);
    });
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    const states = await Promise.all([a, b].map((id) => storedDelivery(hook.id, id)));
    expect(states.map((s) => [s?.status, s?.attempts]).sort()).toEqual([
      ['pending', 0],
      ['succeeded', 1],
    ]);
    expect(error.mock.calls.some((c) => String(c[0]).includes('a delivery failed unexpectedly'))).toBe(true);
  });
});
