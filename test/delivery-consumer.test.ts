import { env } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { auditRows, countingDb, insertWebhook } from './helpers/database';
import { consume, DELIVERIES_QUEUE, deliver } from './helpers/queues';
import { receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { del, fetchAndWait, publishEvent, put, registerWebhook } from './helpers/requests';
import { hoursAgo } from './helpers/time';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const DEFAULT_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000];

async function delivery(id: string) {
  return env.DB.prepare(
    `SELECT status, attempts, next_attempt_at, last_attempt_at, last_status, last_error, schedule_start
     FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER)`,
  )
    .bind(id)
    .first<{
      status: string;
      attempts: number;
      next_attempt_at: string | null;
      last_attempt_at: string | null;
      last_status: number | null;
      last_error: string | null;
    }>();
}

async function attemptsOf(id: string) {
  const { results } = await env.DB.prepare(
    'SELECT attempt, status, error, duration_ms, body FROM delivery_attempts WHERE delivery_id = CAST(?1 AS INTEGER) ORDER BY attempt',
  )
    .bind(id)
    .all<{ attempt: number; status: number | null; error: string | null; duration_ms: number; body: string | null }>();
  return results;
}

const hookRow = (id: string) =>
  env.DB.prepare('SELECT is_enabled, failing_since, secret FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)')
    .bind(id)
    .first<{ is_enabled: number; failing_since: string | null; secret: string | null }>();

/** Makes a delivery look as if it had failed `attempts` times and is due now. */
const setAttempts = (id: string, attempts: number) =>
  env.DB.prepare(
    `UPDATE deliveries SET attempts = ?2, next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE delivery_id = CAST(?1 AS INTEGER)`,
  )
    .bind(id, attempts)
    .run();

describe('the deliveries consumer: one attempt', () => {
  it('POSTs the exact stored bytes, signed so that the standardwebhooks package verifies them', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const { eventId, deliveryIds } = await publishEvent(app, 'MOD_NFT', { token_id: '42', price: 1.5 });
    const { requests } = receiver(() => new Response('thanks'));

    const { result, ids, retries } = await deliver(deliveryIds);

    expect(requests).toHaveLength(1);
    const [req] = requests;
    const { payload } = (await env.DB.prepare('SELECT payload FROM events WHERE event_id = ?1').bind(eventId).first<{
      payload: string;
    }>())!;
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
    const other = (await registerWebhook(freshApp())).secret;
    expect(() => new StandardWebhook(other).verify(req!.body, req!.headers)).toThrow();
    expect(() => new StandardWebhook(hook.secret).verify(`${req!.body} `, req!.headers)).toThrow();

    expect(result.explicitAcks).toEqual(ids);
    expect(retries).toEqual({});
    expect(await delivery(deliveryIds[0]!)).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      next_attempt_at: null,
      last_status: 200,
      last_error: null,
    });
    expect(await attemptsOf(deliveryIds[0]!)).toEqual([
      { attempt: 1, status: 200, error: null, duration_ms: expect.any(Number), body: 'thanks' },
    ]);
  });

  it('keeps the first 1 KiB of the reply and cancels the rest unread', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    let pulled = 0;
    let cancelled = false;
    receiver(
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
    await deliver(deliveryIds);
    const [recorded] = await attemptsOf(deliveryIds[0]!);
    expect(new TextEncoder().encode(recorded!.body!).byteLength).toBe(1024);
    expect(recorded!.body).toBe('é'.repeat(512));
    expect(cancelled).toBe(true);
    expect(pulled).toBeLessThan(10);
    expect((await delivery(deliveryIds[0]!))?.status).toBe('succeeded');
  });

  it('makes a webhook registered before secrets existed a secret, atomically, and signs with it', async () => {
    const app = freshApp();
    const legacy = await insertWebhook(app, { url: 'https://legacy.example.com/h' });
    expect((await hookRow(legacy))?.secret).toBeNull();
    const { deliveryIds } = await publishEvent(app);
    const { requests } = receiver();
    await deliver(deliveryIds);
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

describe('the deliveries consumer: failures and retries', () => {
  it('retries on the schedule: after failed attempt N the delay is the Nth, then the delivery fails', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { eventId, deliveryIds } = await publishEvent(app);
    const id = deliveryIds[0]!;
    const { requests } = receiver(() => new Response('nope', { status: 500 }));
    for (let n = 1; n <= DEFAULT_SCHEDULE.length + 1; n++) {
      await setAttempts(id, n - 1);
      const started = Date.now();
      const { retries, result, ids } = await deliver([id]);
      const row = await delivery(id);
      if (n <= DEFAULT_SCHEDULE.length) {
        expect(retries, `attempt ${n}`).toEqual({ [ids[0]!]: DEFAULT_SCHEDULE[n - 1] });
        expect(row).toMatchObject({ status: 'pending', attempts: n, last_status: 500 });
        const due = Date.parse(row!.next_attempt_at!) - started;
        expect(due).toBeGreaterThanOrEqual(DEFAULT_SCHEDULE[n - 1]! * 1000 - 50);
        expect(due).toBeLessThan(DEFAULT_SCHEDULE[n - 1]! * 1000 + 2000);
      } else {
        expect(retries).toEqual({});
        expect(result.explicitAcks).toEqual(ids);
        expect(row).toMatchObject({ status: 'failed', attempts: n, next_attempt_at: null });
      }
    }
    // The same webhook-id in every attempt.
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([eventId]));
    expect((await attemptsOf(id)).map((a) => [a.attempt, a.status])).toEqual(
      Array.from({ length: 8 }, (_, i) => [i + 1, 500]),
    );
  });

  it('follows DELIVERY_RETRY_SCHEDULE', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    receiver(() => new Response(null, { status: 500 }));
    const schedule = { DELIVERY_RETRY_SCHEDULE: '2s 1m' };
    const first = await deliver(deliveryIds, schedule);
    expect(Object.values(first.retries)).toEqual([2]);
    await setAttempts(deliveryIds[0]!, 1);
    expect(Object.values((await deliver(deliveryIds, schedule)).retries)).toEqual([60]);
    await setAttempts(deliveryIds[0]!, 2);
    expect((await deliver(deliveryIds, schedule)).retries).toEqual({});
    expect((await delivery(deliveryIds[0]!))?.status).toBe('failed');
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
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    receiver(() => new Response(null, { status, headers: { 'retry-after': header } }));
    const { retries } = await deliver(deliveryIds);
    expect(Object.values(retries)).toEqual([wait]);
    expect(await delivery(deliveryIds[0]!)).toMatchObject({ status: 'pending', last_status: status });
  });

  it('reads Retry-After as an HTTP date too', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    receiver(
      () =>
        new Response(null, { status: 503, headers: { 'retry-after': new Date(Date.now() + 600_000).toUTCString() } }),
    );
    const [wait] = Object.values((await deliver(deliveryIds)).retries);
    expect(wait).toBeGreaterThan(590);
    expect(wait).toBeLessThanOrEqual(600);
  });

  it('does not follow redirects: a 3xx is a failed attempt', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    const { requests } = receiver(
      () => new Response(null, { status: 302, headers: { location: 'https://elsewhere.example.com/' } }),
    );
    await deliver(deliveryIds);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.redirect).toBe('manual');
    expect(await delivery(deliveryIds[0]!)).toMatchObject({ status: 'pending', last_status: 302, attempts: 1 });
  });

  it('ends an attempt that takes longer than DELIVERY_TIMEOUT_SECONDS as a timeout', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    receiver(() => new Promise<Response>(() => {}));
    const started = Date.now();
    await deliver(deliveryIds, { DELIVERY_TIMEOUT_SECONDS: '1' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
    expect(await delivery(deliveryIds[0]!)).toMatchObject({
      status: 'pending',
      last_status: null,
      last_error: 'timeout',
    });
    const [recorded] = await attemptsOf(deliveryIds[0]!);
    expect(recorded).toMatchObject({ status: null, error: 'timeout' });
    expect(recorded!.duration_ms).toBeGreaterThanOrEqual(990);
  });

  it('counts a reply whose body does not arrive in time as a timeout too', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    receiver(() => new Response(new ReadableStream({ pull: () => new Promise(() => {}) })));
    await deliver(deliveryIds, { DELIVERY_TIMEOUT_SECONDS: '1' });
    expect(await delivery(deliveryIds[0]!)).toMatchObject({ last_error: 'timeout' });
  });

  it('records a connection failure, and a TLS failure', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const a = await publishEvent(app);
    const b = await publishEvent(app);
    receiver((_, n) =>
      Promise.reject(new Error(n === 1 ? 'Network connection lost.' : 'TLS peer certificate is not trusted')),
    );
    await deliver(a.deliveryIds);
    await deliver(b.deliveryIds);
    expect((await delivery(a.deliveryIds[0]!))?.last_error).toBe('connection');
    expect((await delivery(b.deliveryIds[0]!))?.last_error).toBe('tls');
  });

  it('never requests a URL that the rules refuse now, and records url_refused', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    // Rules may have tightened since it was registered (or a row was written by hand).
    await env.DB.prepare('UPDATE webhooks SET url = ?2 WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(id, 'https://10.0.0.1/internal')
      .run();
    const { spy } = receiver();
    await deliver(deliveryIds);
    expect(spy).not.toHaveBeenCalled();
    expect(await delivery(deliveryIds[0]!)).toMatchObject({
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
    await expectValue(res, 201);
    const { deliveryIds } = await publishEvent(app);
    const { requests } = receiver();
    await deliver(deliveryIds, local);
    expect(requests.map((r) => r.url)).toEqual(['http://127.0.0.1:8790/hook']);
    // Without the setting, the same URL is refused at delivery.
    const again = await publishEvent(app);
    await deliver(again.deliveryIds);
    expect((await delivery(again.deliveryIds[0]!))?.last_error).toBe('url_refused');
  });
});

describe('the deliveries consumer: webhooks that change, and dead endpoints', () => {
  it('cancels a delivery whose webhook was disabled or deleted meanwhile, without a request', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const off = await registerWebhook(app);
    const gone = await registerWebhook(app, { url: `https://${app}.example.com/gone` });
    const { deliveryIds } = await publishEvent(app);
    expect(deliveryIds).toHaveLength(2);
    await put({ webhook_id: off.id, is_enabled: false }, headers);
    await del(`webhook_id=${gone.id}`, headers);
    const { spy } = receiver();
    const { result, ids } = await deliver(deliveryIds);
    expect(spy).not.toHaveBeenCalled();
    expect(result.explicitAcks.sort()).toEqual([...ids].sort());
    for (const id of deliveryIds)
      expect(await delivery(id)).toMatchObject({ status: 'cancelled', next_attempt_at: null, attempts: 0 });
  });

  it('disables a webhook that answers 410 Gone at once, with an audit record by the system', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    receiver(() => new Response('gone', { status: 410 }));
    const { retries } = await deliver(deliveryIds);
    expect(retries).toEqual({});
    expect(await delivery(deliveryIds[0]!)).toMatchObject({
      status: 'failed',
      last_status: 410,
      next_attempt_at: null,
    });
    expect((await hookRow(hook.id))?.is_enabled).toBe(0);
    const audit = await auditRows(hook.id);
    expect(audit.map((a) => [a.action, a.actor])).toEqual([
      ['create', app],
      ['disable', 'system'],
    ]);
    const reason = await env.DB.prepare(
      "SELECT reason FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER) AND action = 'disable'",
    )
      .bind(hook.id)
      .first('reason');
    expect(reason).toBe('the endpoint answered 410 Gone');
    expect(JSON.parse(audit[1]!.row_before)).toMatchObject({ is_enabled: 1 });
    // The application turns it on again with PUT.
    const { res } = { res: await put({ webhook_id: hook.id, is_enabled: true }, bearer(await tokenFor(app))) };
    expect(res.status).toBe(200);
    expect((await hookRow(hook.id))?.is_enabled).toBe(1);
  });

  it('disables a webhook whose attempts all failed for AUTO_DISABLE_AFTER_HOURS, at least twice 12 h apart', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response(null, { status: 500 }));
    const failSince = async (h: number) => {
      const at = hoursAgo(h);
      await env.DB.prepare('UPDATE webhooks SET failing_since = ?2 WHERE webhook_id = CAST(?1 AS INTEGER)')
        .bind(hook.id, at)
        .run();
      return at;
    };

    // The first failure starts the clock.
    await deliver((await publishEvent(app)).deliveryIds);
    const since = (await hookRow(hook.id))?.failing_since;
    expect(Date.now() - Date.parse(since!)).toBeLessThan(5000);
    // Not yet 120 hours.
    await failSince(119);
    await deliver((await publishEvent(app)).deliveryIds);
    expect((await hookRow(hook.id))?.is_enabled).toBe(1);
    // With a shorter setting, still two failures 12 hours apart are needed.
    await failSince(11);
    await deliver((await publishEvent(app)).deliveryIds, { AUTO_DISABLE_AFTER_HOURS: '1' });
    expect((await hookRow(hook.id))?.is_enabled).toBe(1);
    const first = await failSince(121);
    await deliver((await publishEvent(app)).deliveryIds);
    expect((await hookRow(hook.id))?.is_enabled).toBe(0);
    const reason = await env.DB.prepare(
      "SELECT actor, reason FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER) AND action = 'disable'",
    )
      .bind(hook.id)
      .first();
    expect(reason).toEqual({ actor: 'system', reason: `every attempt failed since ${first}` });
  });

  it('a success clears the failure clock', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    await env.DB.prepare('UPDATE webhooks SET failing_since = ?2 WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(hook.id, hoursAgo(200))
      .run();
    receiver();
    await deliver((await publishEvent(app)).deliveryIds);
    expect(await hookRow(hook.id)).toMatchObject({ is_enabled: 1, failing_since: null });
  });
});

describe('the deliveries consumer: batches', () => {
  it('loads and records a batch of ten deliveries in two D1 round trips, attempting at most six at once', async () => {
    const app = freshApp();
    for (let i = 0; i < 10; i++) await registerWebhook(app, { url: `https://${app}.example.com/h${i}` });
    const { deliveryIds } = await publishEvent(app);
    expect(deliveryIds).toHaveLength(10);
    let open = 0;
    let most = 0;
    receiver(async () => {
      open++;
      most = Math.max(most, open);
      await new Promise((r) => setTimeout(r, 20));
      open--;
      return new Response('ok');
    });
    const { db, calls } = countingDb(env.DB);
    const { result } = await deliver(deliveryIds, { DB: db });
    expect(calls()).toBe(2);
    expect(most).toBe(6);
    expect(result.explicitAcks).toHaveLength(10);
    for (const id of deliveryIds) expect((await delivery(id))?.status).toBe('succeeded');
  });

  it('attempts a delivery once when its message comes twice, and never again once it ended', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    const { requests } = receiver();
    const { result } = await deliver([deliveryIds[0]!, deliveryIds[0]!]);
    expect(requests).toHaveLength(1);
    expect(result.explicitAcks).toHaveLength(2);
    await deliver(deliveryIds);
    expect(requests).toHaveLength(1);
    expect(await attemptsOf(deliveryIds[0]!)).toHaveLength(1);
  });

  it('puts back a message that comes before its attempt is due', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    await env.DB.prepare('UPDATE deliveries SET next_attempt_at = ?2 WHERE delivery_id = CAST(?1 AS INTEGER)')
      .bind(deliveryIds[0], new Date(Date.now() + 120_000).toISOString())
      .run();
    const { spy } = receiver();
    const { retries } = await deliver(deliveryIds);
    expect(spy).not.toHaveBeenCalled();
    const [wait] = Object.values(retries);
    expect(wait).toBeGreaterThan(115);
    expect(wait).toBeLessThanOrEqual(120);
  });

  it('drops a malformed message with a log line, and acknowledges a delivery that no longer exists', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const { spy } = receiver();
    const { result, ids } = await deliver(['999999999']);
    // Ids outside int64 (2^63 and 10^19 - 1) and not canonical (a leading zero) are not delivery ids either.
    const bad = await consume(DELIVERIES_QUEUE, [
      { delivery_id: 5 },
      'x',
      null,
      { delivery_id: '9223372036854775808' },
      { delivery_id: '9999999999999999999' },
      { delivery_id: '01' },
    ]);
    expect(spy).not.toHaveBeenCalled();
    expect(result.explicitAcks).toEqual(ids);
    expect(bad.result.explicitAcks).toHaveLength(6);
    expect(warn.mock.calls.filter((c) => String(c[0]).includes('dropped a malformed delivery message'))).toHaveLength(
      6,
    );
  });

  it('waits, without a request, while WEBHOOK_SECRET_KEY is missing, and says so in the log', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    const { spy } = receiver();
    const { retries } = await deliver(deliveryIds, { WEBHOOK_SECRET_KEY: '' });
    expect(spy).not.toHaveBeenCalled();
    expect(Object.values(retries)).toEqual([60]);
    expect(await delivery(deliveryIds[0]!)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(error.mock.calls.some((c) => String(c[0]).includes('WEBHOOK_SECRET_KEY'))).toBe(true);
  });

  it('waits while the delivery settings are invalid, and names the setting in the log', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    const { spy } = receiver();
    const { result } = await deliver(deliveryIds, { DELIVERY_RETRY_SCHEDULE: '5s 13h' });
    expect(spy).not.toHaveBeenCalled();
    expect(result.retryBatch).toMatchObject({ retry: true });
    expect(error.mock.calls.some((c) => String(c[0]).includes('DELIVERY_RETRY_SCHEDULE'))).toBe(true);
  });
});

describe('the deliveries consumer: copies of a message', () => {
  it('drops a message of an older queue generation without a request, and carries on with the current one', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    const id = deliveryIds[0]!;
    // The Cron Trigger queued it again (generation 1): the first message, turning up late, is a copy.
    await env.DB.prepare('UPDATE deliveries SET queue_gen = 1 WHERE delivery_id = ?1').bind(id).run();
    const { requests } = receiver(() => new Response(null, { status: 500 }));
    const stale = await consume(DELIVERIES_QUEUE, [{ delivery_id: id }]);
    expect(requests).toHaveLength(0);
    expect(stale.result.explicitAcks).toEqual(stale.ids);
    expect(stale.retries).toEqual({});
    const live = await consume(DELIVERIES_QUEUE, [
      { delivery_id: id, gen: 0 },
      { delivery_id: id, gen: 1 },
    ]);
    expect(requests).toHaveLength(1);
    // The current one is put back for the next attempt; the copy is acknowledged.
    expect(live.retries).toEqual({ [live.ids[1]!]: 5 });
    expect(live.result.explicitAcks).toEqual([live.ids[0]]);
  });

  it('writes one audit record when several deliveries of one webhook get 410 in a batch', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const a = await publishEvent(app);
    const b = await publishEvent(app);
    receiver(() => new Response(null, { status: 410 }));
    await deliver([...a.deliveryIds, ...b.deliveryIds]);
    const disables = (await auditRows(hook.id)).filter((r) => r.action === 'disable');
    expect(disables).toHaveLength(1);
    expect(disables[0]?.actor).toBe('system');
  });

  it('starts the failure clock afresh when the application enables the webhook again', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const headers = bearer(await tokenFor(app));
    await env.DB.prepare('UPDATE webhooks SET is_enabled = 0, failing_since = ?2 WHERE webhook_id = ?1')
      .bind(hook.id, hoursAgo(200))
      .run();
    expect((await put({ webhook_id: hook.id, is_enabled: true }, headers)).status).toBe(200);
    expect(await hookRow(hook.id)).toMatchObject({ is_enabled: 1, failing_since: null });
    receiver(() => new Response(null, { status: 500 }));
    await deliver((await publishEvent(app)).deliveryIds);
    // One failure after re-enabling does not disable it again.
    expect((await hookRow(hook.id))?.is_enabled).toBe(1);
  });

  it('records one failed attempt when something unexpected breaks it, and still records the others', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    await registerWebhook(app);
    await registerWebhook(app, { url: `https://${app}.example.com/second` });
    const { deliveryIds } = await publishEvent(app);
    receiver((req) => {
      if (req.url.endsWith('/second')) throw new TypeError('unexpected');
      return new Response('ok');
    });
    await deliver(deliveryIds);
    const states = await Promise.all(deliveryIds.map((id) => delivery(id)));
    expect(states.map((s) => s?.status).sort()).toEqual(['pending', 'succeeded']);
  });
});
