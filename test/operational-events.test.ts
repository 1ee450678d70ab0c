// Operational events (src/events/operational.ts, src/deliveries/alerts.ts): each one driven by its
// real cause (a receiver answering 410, a retry schedule run out, failing then succeeding, a
// rotation, a PUT), delivered by the endpoints' objects to the application's webhooks whose
// event_types name it (never to the one it is about, never to one with null event_types), signed
// so that the standardwebhooks package verifies them, and to the platform's operational endpoint
// with app_id in the data.
import { env, runInDurableObject } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OPERATIONAL_TYPES } from '../src/core/event-types';
import { PLATFORM_ENDPOINT } from '../src/core/operational-settings';
import { alertsAfter } from '../src/deliveries/alerts';
import { applicationOf, applicationSql, deliverDue, endpointOf, endpointSql, makeDue } from './helpers/objects';
import { consume, EVENTS_QUEUE } from './helpers/queues';
import { type Received, receiver } from './helpers/receiver';
import { expectEventFail, expectSuccess, expectValue } from './helpers/replies';
import { eventRequest, fetchAndWait, ORIGIN, postJson, publishEvent, stoppedAfterEachTest } from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

/** Webhooks registered here (and any added to `used`) stop their objects' alarms when a test ends. */
const { used, register } = stoppedAfterEachTest();

afterEach(() => {
  vi.restoreAllMocks();
});

/** The platform's endpoint: its URL and secret, as a test sets them. */
const PLATFORM_URL = 'https://ops.platform.example.com/operational';
const PLATFORM_SECRET = `whsec_${btoa('platform-operational-secret-0123')}`;
const PLATFORM = { OPERATIONAL_WEBHOOK_URL: PLATFORM_URL, OPERATIONAL_WEBHOOK_SECRET: PLATFORM_SECRET };

/** Gives an object the test settings with `overrides` (as a deploy with them would). */
const OWN = Symbol("the object's own env");
const useSettings = (stub: DurableObjectStub, overrides: Record<string, unknown>) =>
  runInDurableObject(stub, (instance) => {
    const object = instance as unknown as { env: CloudflareBindings; [OWN]?: CloudflareBindings };
    object[OWN] ??= object.env;
    object.env = { ...object[OWN], ...overrides } as CloudflareBindings;
  });

/**
 * One receiver for every host: `reply(host, n)` answers (200 by default), and each host's
 * requests are kept in order.
 */
function receivers(reply: (host: string, req: Received) => Response = () => new Response('ok')) {
  const byHost = new Map<string, Received[]>();
  receiver((req) => {
    const host = new URL(req.url).host;
    byHost.set(host, [...(byHost.get(host) ?? []), req]);
    return reply(host, req);
  });
  return (host: string) => byHost.get(host) ?? [];
}

/** A webhook of `app` at its own host that subscribes to `types`. */
async function hookAt(app: string, name: string, types: string[] | null) {
  const host = `${name}.${app}.example.com`;
  const hook = await register(app, { url: `https://${host}/hook`, event_types: types });
  return { ...hook, host };
}

/** The operational events a receiver got, verified with the webhook's secret: [webhook-id, body]. */
function verified(requests: Received[], secret: string) {
  return requests.map((req) => ({
    id: req.headers['webhook-id'],
    body: new StandardWebhook(secret).verify(req.body, req.headers) as { type: string; data: Record<string, unknown> },
  }));
}

/** The types of the deliveries an endpoint's object holds. */
const typesAt = async (webhookId: string) =>
  (await endpointSql<{ type: string }>(webhookId, 'SELECT type FROM deliveries ORDER BY delivery_id')).map(
    (r) => r.type,
  );

const ALL = [...OPERATIONAL_TYPES];

describe('endpoint.disabled', () => {
  it('a receiver answering 410: "gone", to the webhooks that name the type; not to itself, not to null event_types', async () => {
    const app = freshApp();
    const got = receivers((host) => new Response(null, { status: host.startsWith('dying.') ? 410 : 200 }));
    const dying = await hookAt(app, 'dying', ['NEW_NFT', 'endpoint.disabled']);
    const listener = await hookAt(app, 'listener', ['endpoint.disabled']);
    const everything = await hookAt(app, 'everything', null);
    // A 410 ends its delivery failed, but that is endpoint.disabled, not delivery.exhausted.
    const other = await hookAt(app, 'other', ['delivery.exhausted', 'endpoint.failing']);
    await publishEvent(app);
    await deliverDue(dying.id);
    expect(
      (await env.DB.prepare('SELECT is_enabled FROM webhooks WHERE webhook_id = ?1').bind(dying.id).first())!
        .is_enabled,
    ).toBe(0);
    await deliverDue(listener.id, everything.id, other.id);

    const [event] = verified(got(listener.host), listener.secret);
    expect(got(listener.host)).toHaveLength(1);
    expect(event!.body).toEqual({
      type: 'endpoint.disabled',
      timestamp: expect.any(String),
      data: { webhook_id: Number(dying.id), url: `https://${dying.host}/hook`, reason: 'gone' },
    });
    // Recorded as any delivery: the listener's delivery log has it, succeeded.
    expect(await endpointSql(listener.id, 'SELECT type, status, message_id FROM deliveries')).toEqual([
      { type: 'endpoint.disabled', status: 'succeeded', message_id: event!.id },
    ]);
    // The webhook with null event_types got the published event only; the one about whom it is
    // got nothing of its own; one naming another type got nothing.
    expect(await typesAt(everything.id)).toEqual(['NEW_NFT']);
    expect(await typesAt(dying.id)).toEqual(['NEW_NFT']);
    expect(await typesAt(other.id)).toEqual([]);
  });

  it("never reaches another application's webhook that names the type; the application's own listener hears it", async () => {
    const app = freshApp();
    const other = freshApp();
    const got = receivers((host) => new Response(null, { status: host.startsWith('dying.') ? 410 : 200 }));
    const dying = await hookAt(app, 'dying', ['NEW_NFT']);
    const listener = await hookAt(app, 'listener', ['endpoint.disabled']);
    const elsewhere = await hookAt(other, 'listener', ['endpoint.disabled']);
    await publishEvent(app);
    await deliverDue(dying.id);
    await deliverDue(listener.id, elsewhere.id);
    expect(verified(got(listener.host), listener.secret).map((e) => e.body.type)).toEqual(['endpoint.disabled']);
    expect(await typesAt(listener.id)).toEqual(['endpoint.disabled']);
    expect(got(elsewhere.host)).toEqual([]);
    expect(await typesAt(elsewhere.id)).toEqual([]);
    expect(await applicationSql(other, 'SELECT event_id FROM events')).toEqual([]);
  });

  it('failing for AUTO_DISABLE_AFTER_HOURS: "failing"', async () => {
    const app = freshApp();
    const got = receivers((host) => new Response(null, { status: host.startsWith('dead.') ? 503 : 200 }));
    const dead = await hookAt(app, 'dead', ['NEW_NFT']);
    const listener = await hookAt(app, 'listener', ['endpoint.disabled']);
    // Its first failure since its last success was 121 hours ago (the default is 120).
    await env.DB.prepare('UPDATE webhooks SET failing_since = ?2 WHERE webhook_id = ?1')
      .bind(dead.id, new Date(Date.now() - 121 * 3_600_000).toISOString())
      .run();
    await publishEvent(app);
    await deliverDue(dead.id);
    expect(
      (await env.DB.prepare('SELECT is_enabled FROM webhooks WHERE webhook_id = ?1').bind(dead.id).first())!.is_enabled,
    ).toBe(0);
    await deliverDue(listener.id);
    expect(verified(got(listener.host), listener.secret).map((e) => e.body.data)).toEqual([
      { webhook_id: Number(dead.id), url: `https://${dead.host}/hook`, reason: 'failing' },
    ]);
  });

  it('a PUT is_enabled=false: "application", after an unchanged reply; PUT of the same state again makes none', async () => {
    const app = freshApp();
    const got = receivers();
    const target = await hookAt(app, 'target', ['endpoint.disabled']);
    const listener = await hookAt(app, 'listener', ['endpoint.disabled']);
    const headers = bearer(await tokenFor(app));
    const request = () =>
      new Request(`${ORIGIN}/v1.0/app/nft/webhook`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ webhook_id: target.id, is_enabled: false }),
      });
    await expectSuccess(await fetchAndWait({}, request()));
    await expectSuccess(await fetchAndWait({}, request()));
    await deliverDue(listener.id);
    const events = verified(got(listener.host), listener.secret);
    expect(events.map((e) => e.body.data)).toEqual([
      { webhook_id: Number(target.id), url: `https://${target.host}/hook`, reason: 'application' },
    ]);
    // Not about itself: the disabled webhook's own object holds nothing.
    expect(await typesAt(target.id)).toEqual([]);
  });

  it("follows a listener's content filter", async () => {
    const app = freshApp();
    const got = receivers();
    const target = await hookAt(app, 'target', null);
    const types = ['endpoint.disabled'];
    const gone = await register(app, {
      url: `https://gone.${app}.example.com/hook`,
      event_types: types,
      filter: { 'data.reason': 'gone' },
    });
    const byApp = await register(app, {
      url: `https://app.${app}.example.com/hook`,
      event_types: types,
      filter: { 'data.reason': 'application' },
    });
    await expectSuccess(
      await fetchAndWait(
        {},
        new Request(`${ORIGIN}/v1.0/app/nft/webhook`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json', ...bearer(await tokenFor(app)) },
          body: JSON.stringify({ webhook_id: target.id, is_enabled: false }),
        }),
      ),
    );
    await deliverDue(gone.id, byApp.id);
    expect(got(`gone.${app}.example.com`)).toEqual([]);
    expect(await typesAt(gone.id)).toEqual([]);
    expect(verified(got(`app.${app}.example.com`), byApp.secret).map((e) => e.body.data.reason)).toEqual([
      'application',
    ]);
  });
});

describe('delivery.exhausted', () => {
  it('a retry schedule run out, with the last attempt', async () => {
    const app = freshApp();
    const got = receivers((host) => new Response('busy', { status: host.startsWith('failing.') ? 503 : 200 }));
    const failing = await hookAt(app, 'failing', ['NEW_NFT']);
    const listener = await hookAt(app, 'listener', ['delivery.exhausted']);
    await useSettings(endpointOf(failing.id), { DELIVERY_RETRY_SCHEDULE: '5s' });
    const { eventId, deliveryIds } = await publishEvent(app);
    const [id] = deliveryIds;
    await deliverDue(failing.id);
    // One retry left: nothing yet.
    expect(await typesAt(listener.id)).toEqual([]);
    await makeDue(failing.id, id!);
    await deliverDue(failing.id);
    expect(got(failing.host)).toHaveLength(2);
    await deliverDue(listener.id);
    expect(verified(got(listener.host), listener.secret).map((e) => e.body.data)).toEqual([
      {
        webhook_id: Number(failing.id),
        delivery_id: Number(id),
        event_id: eventId,
        type: 'NEW_NFT',
        attempts: 2,
        last_status: 503,
        last_error: null,
      },
    ]);
  });
});

/** Publishes `count` NEW_NFT events for `app` in one batch. */
async function publishMany(app: string, count: number) {
  const events = Array.from({ length: count }, (_, i) => ({
    app_id: app,
    type: 'NEW_NFT',
    data: { n: i },
    id: `e${crypto.randomUUID().slice(0, 8)}${i}`,
  }));
  const res = await fetchAndWait(
    {},
    new Request(`${ORIGIN}/v1.0/platform/nft/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(await platformToken()) },
      body: JSON.stringify({ events }),
    }),
  );
  expect(res.status).toBe(202);
}

describe('endpoint.failing and endpoint.recovered', () => {
  it('50 %, then 90 % of at least 10 attempts in the hour, each once; the first success after is endpoint.recovered', async () => {
    const app = freshApp();
    let answer = (n: number) => (n % 2 === 0 ? 500 : 200);
    let n = 0;
    const got = receivers((host) =>
      host.startsWith('flaky.') ? new Response(null, { status: answer(++n) }) : new Response('ok'),
    );
    const flaky = await hookAt(app, 'flaky', ['NEW_NFT']);
    const listener = await hookAt(app, 'listener', ['endpoint.failing', 'endpoint.recovered']);
    // 9 attempts, half failing: too few to tell.
    await publishMany(app, 9);
    await deliverDue(flaky.id);
    expect(await typesAt(listener.id)).toEqual([]);
    // The tenth: 5 of 10 failed.
    await publishMany(app, 1);
    await deliverDue(flaky.id);
    expect(got(flaky.host)).toHaveLength(10);
    await deliverDue(listener.id);
    const first = verified(got(listener.host), listener.secret);
    expect(first.map((e) => e.body)).toEqual([
      {
        type: 'endpoint.failing',
        timestamp: expect.any(String),
        data: {
          webhook_id: Number(flaky.id),
          url: `https://${flaky.host}/hook`,
          failure_rate: 0.5,
          failed: 5,
          attempts: 10,
          since: expect.any(String),
        },
      },
    ]);
    // Then every attempt fails: at 90 % once (45 of 50), and no more after.
    answer = () => 500;
    await publishMany(app, 40);
    await deliverDue(flaky.id);
    await publishMany(app, 10);
    await deliverDue(flaky.id);
    await deliverDue(listener.id);
    const events = verified(got(listener.host), listener.secret).map((e) => e.body);
    expect(events.map((e) => [e.type, e.data.failure_rate, e.data.failed, e.data.attempts])).toEqual([
      ['endpoint.failing', 0.5, 5, 10],
      ['endpoint.failing', 0.9, 45, 50],
    ]);
    // A success: endpoint.recovered, once.
    answer = () => 200;
    await publishMany(app, 2);
    await deliverDue(flaky.id);
    await deliverDue(listener.id);
    const last = verified(got(listener.host), listener.secret).slice(2);
    expect(last.map((e) => e.body.data)).toEqual([{ webhook_id: Number(flaky.id), url: `https://${flaky.host}/hook` }]);
    expect(last.map((e) => e.body.type)).toEqual(['endpoint.recovered']);
    // The window stays small: at most one row of counts per minute, in the object's storage.
    const [state] = await endpointSql<{ value: string }>(flaky.id, `SELECT value FROM endpoint WHERE key = 'alerts'`);
    expect(JSON.parse(state!.value).window.length).toBeLessThanOrEqual(2);
  });

  it('a threshold fires again only after a success came between and 24 hours passed', () => {
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const hour = 3_600_000;
    const fail = (at: number, count = 10) => Array.from({ length: count }, () => ({ at, ok: false }));
    let step = alertsAfter({ window: [], fired: {}, failing: false }, fail(t0), t0);
    expect(step.failing).toMatchObject({
      failure_rate: 1,
      failed: 10,
      attempts: 10,
      since: new Date(t0).toISOString(),
    });
    // Failing on, no success between: nothing more.
    step = alertsAfter(step.state, fail(t0 + hour), t0 + hour);
    expect(step.failing).toBeNull();
    // A success: recovered (10 of 11 still failed in the hour, but the alert is not 24 hours old).
    step = alertsAfter(step.state, [{ at: t0 + 1.5 * hour, ok: true }], t0 + 1.5 * hour);
    expect(step).toMatchObject({ recovered: true, failing: null });
    // Failing again within 24 hours of the alert: nothing.
    step = alertsAfter(step.state, fail(t0 + 3 * hour), t0 + 3 * hour);
    expect(step).toMatchObject({ recovered: false, failing: null });
    // A success came between and 24 hours passed: it fires again.
    step = alertsAfter(step.state, fail(t0 + 25 * hour, 20), t0 + 25 * hour);
    expect(step.failing).toMatchObject({ failure_rate: 1, attempts: 20 });
    // Once more at once: no (no success since).
    expect(alertsAfter(step.state, fail(t0 + 50 * hour), t0 + 50 * hour).failing).toBeNull();
    // Attempts older than an hour are no longer counted.
    expect(alertsAfter(step.state, [], t0 + 27 * hour).state.window).toEqual([]);
  });
});

describe('secret.rotated', () => {
  it('a rotation through the secret route: expires_at when the previous secret stops signing', async () => {
    const app = freshApp();
    const got = receivers();
    const rotated = await hookAt(app, 'rotated', ['secret.rotated']);
    const listener = await hookAt(app, 'listener', ['secret.rotated']);
    const { res } = await postJson('secret', { webhook_id: rotated.id }, bearer(await tokenFor(app)));
    const { value } = await expectValue<{ secret: string }>(res, 200);
    await deliverDue(listener.id);
    const until = await env.DB.prepare('SELECT previous_secret_until FROM webhooks WHERE webhook_id = ?1')
      .bind(rotated.id)
      .first<string>('previous_secret_until');
    expect(verified(got(listener.host), listener.secret).map((e) => e.body.data)).toEqual([
      { webhook_id: Number(rotated.id), expires_at: until },
    ]);
    // Not to itself, whatever secret.
    expect(value.secret).not.toBe(rotated.secret);
    expect(await typesAt(rotated.id)).toEqual([]);
  });
});

describe("the platform's operational endpoint", () => {
  it('gets every operational event with app_id in its data, signed with OPERATIONAL_WEBHOOK_SECRET, and retried', async () => {
    const app = freshApp();
    let platformAnswer = 500;
    const got = receivers((host) =>
      host.startsWith('dying.')
        ? new Response(null, { status: 410 })
        : host === 'ops.platform.example.com'
          ? new Response(null, { status: platformAnswer })
          : new Response('ok'),
    );
    const dying = await hookAt(app, 'dying', null);
    // No webhook of the application names the type: the platform hears of it all the same.
    await useSettings(endpointOf(dying.id), PLATFORM);
    await useSettings(endpointOf(PLATFORM_ENDPOINT), PLATFORM);
    used.add(PLATFORM_ENDPOINT);
    await publishEvent(app);
    await deliverDue(dying.id);
    await deliverDue(PLATFORM_ENDPOINT);
    const failed = got('ops.platform.example.com');
    expect(failed).toHaveLength(1);
    // Retried on the schedule: the attempt is recorded, the delivery waits for its next one.
    const [row] = await endpointSql<{ status: string; attempts: number; delivery_id: string }>(
      PLATFORM_ENDPOINT,
      `SELECT status, attempts, CAST(delivery_id AS TEXT) AS delivery_id FROM deliveries WHERE message_id = ?1`,
      failed[0]!.headers['webhook-id']!,
    );
    expect(row).toMatchObject({ status: 'pending', attempts: 1 });
    platformAnswer = 204;
    await makeDue(PLATFORM_ENDPOINT, row!.delivery_id);
    await deliverDue(PLATFORM_ENDPOINT);
    const [, second] = got('ops.platform.example.com');
    expect(new StandardWebhook(PLATFORM_SECRET).verify(second!.body, second!.headers)).toEqual({
      type: 'endpoint.disabled',
      timestamp: expect.any(String),
      data: { webhook_id: Number(dying.id), url: `https://${dying.host}/hook`, reason: 'gone', app_id: app },
    });
    expect(second!.url).toBe(PLATFORM_URL);
    expect(
      await endpointSql(
        PLATFORM_ENDPOINT,
        'SELECT status, attempts FROM deliveries WHERE message_id = ?1',
        second!.headers['webhook-id']!,
      ),
    ).toEqual([{ status: 'succeeded', attempts: 2 }]);
  });

  it('invalid settings fail closed: nothing is sent, the deliveries wait, a log line names the setting', async () => {
    const app = freshApp();
    const got = receivers();
    const target = await hookAt(app, 'target', null);
    const bad = { ...PLATFORM, OPERATIONAL_WEBHOOK_SECRET: 'not-a-secret' };
    await useSettings(applicationOf(app), bad);
    await useSettings(endpointOf(PLATFORM_ENDPOINT), bad);
    used.add(PLATFORM_ENDPOINT);
    const error = vi.spyOn(console, 'error');
    const before = await endpointSql(
      PLATFORM_ENDPOINT,
      `SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'`,
    );
    await expectSuccess(
      await fetchAndWait(
        {},
        new Request(`${ORIGIN}/v1.0/app/nft/webhook`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json', ...bearer(await tokenFor(app)) },
          body: JSON.stringify({ webhook_id: target.id, is_enabled: false }),
        }),
      ),
    );
    await deliverDue(PLATFORM_ENDPOINT);
    expect(got('ops.platform.example.com')).toEqual([]);
    const after = await endpointSql(PLATFORM_ENDPOINT, `SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'`);
    expect(Number(after[0]!.n)).toBe(Number(before[0]!.n) + 1);
    expect(error.mock.calls.some((c) => String(c[0]).includes('OPERATIONAL_WEBHOOK_SECRET'))).toBe(true);
    // Fixed: the waiting delivery goes, with app_id, signed with the secret now set.
    await useSettings(endpointOf(PLATFORM_ENDPOINT), PLATFORM);
    await endpointSql(
      PLATFORM_ENDPOINT,
      `UPDATE deliveries SET next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE status = 'pending'`,
    );
    await deliverDue(PLATFORM_ENDPOINT);
    const sent = got('ops.platform.example.com').map(
      (req) => new StandardWebhook(PLATFORM_SECRET).verify(req.body, req.headers) as { data: Record<string, unknown> },
    );
    expect(sent.map((e) => e.data).filter((d) => d.app_id === app)).toEqual([
      { webhook_id: Number(target.id), url: `https://${target.host}/hook`, reason: 'application', app_id: app },
    ]);
    await useSettings(endpointOf(PLATFORM_ENDPOINT), {});
  });
});

describe('publishers cannot publish the operational types', () => {
  it.each(ALL)('%s: 400, single and batch, nothing stored', async (type) => {
    const app = freshApp();
    const hook = await register(app, { event_types: [type] });
    const single = await fetchAndWait({}, eventRequest({ app_id: app, type, data: {} }, bearer(await platformToken())));
    expect(single.headers.get('x-error-detail')).toBe(`type ${type} is reserved for the service's operational events`);
    await expectEventFail(single, 400);
    const batch = await fetchAndWait(
      {},
      new Request(`${ORIGIN}/v1.0/platform/nft/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(await platformToken()) },
        body: JSON.stringify({
          events: [
            { app_id: app, type: 'NEW_NFT', data: {}, id: 'a' },
            { app_id: app, type, data: {}, id: 'b' },
          ],
        }),
      }),
    );
    expect(batch.headers.get('x-error-detail')).toBe(
      `events[1]: type ${type} is reserved for the service's operational events`,
    );
    await expectEventFail(batch, 400);
    // From the events queue: dropped with a log line naming the reason, never retried.
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const { result, ids } = await consume(EVENTS_QUEUE, [{ app_id: app, type, data: {} }]);
    expect(result.retryMessages).toEqual([]);
    expect(result.explicitAcks).toEqual(ids);
    expect(warn.mock.calls.map((c) => JSON.parse(String(c[0])))).toContainEqual(
      expect.objectContaining({
        msg: 'dropped a malformed event message',
        reason: `type ${type} is reserved for the service's operational events`,
      }),
    );
    expect(await typesAt(hook.id)).toEqual([]);
  });
});
