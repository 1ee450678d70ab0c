// Deliveries end to end over real sockets: webhooks registered through the API at a receiver in
// this process, events published over HTTP to `wrangler dev`, each endpoint's Durable Object (its
// alarm) POSTing the deliveries here; what arrives is checked byte for byte and verified with
// `standardwebhooks`, and what the Worker recorded is read from the delivery log (the objects'
// storage) and, for the control plane, from its local D1.
// Each test has an application (and receiver paths) of its own, so they can run at once.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { apiOf, d1Of, type LoggedDelivery, logUntil as logUntilOf } from './api';
import { PATH } from './client';
import { type Received, type Receiver, signedHeaders, sleep, startReceiver, until } from './receiver';
import { DELIVERY } from './wrangler-dev';

const api = apiOf(inject('baseUrl'), inject('secret'));
/** After the request that shows the sending has passed a point, how long a request that should not come is given. */
const GRACE_MS = 1500;

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver(inject('receiverPort'));
});
afterAll(() => receiver?.close());

const sql = d1Of(inject('persistTo'));

const call = (method: string, path: string, appId: string, body?: string) => api.call(method, path, appId, body);
const register = (appId: string, path: string, eventTypes?: string[]) =>
  api.register(appId, receiver.url(path), eventTypes);
const publish = api.publish;

/** Polls `webhookId`'s delivery log until `done`; the log (newest first). */
const logUntil = (appId: string, webhookId: number, what: string, done: (log: LoggedDelivery[]) => boolean) =>
  logUntilOf(api, appId, webhookId, what, done, 30_000);

/** The delivery of `eventId` in the log, with its attempt log. */
async function withAttempts(appId: string, log: LoggedDelivery[], eventId: string) {
  const found = log.find((d) => d.event_id === eventId);
  expect(found, eventId).toBeDefined();
  return (await api.delivery(appId, found?.delivery_id as string)) as LoggedDelivery;
}

const pick = ({ event_id, status, attempts, last_status, last_error, next_attempt_at }: LoggedDelivery) => ({
  event_id,
  status,
  attempts,
  last_status,
  last_error,
  next_attempt_at,
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Asserts that `request` is the delivery of `eventId`, signed with `secret`, and returns its body's timestamp. */
function expectDelivery(request: Received, secret: string, eventId: string, type: string, data: string): string {
  expect(request.method).toBe('POST');
  expect(request.headers['content-type']).toBe('application/json');
  expect(request.headers['webhook-id']).toBe(eventId);
  const text = request.body.toString('utf8');
  const timestamp = /^\{"type":"[^"]*","timestamp":"([^"]*)"/.exec(text)?.[1] ?? '';
  expect(timestamp, text).toMatch(ISO);
  // Byte for byte: `data` exactly as it was published.
  expect(request.body.equals(Buffer.from(`{"type":"${type}","timestamp":"${timestamp}","data":${data}}`)), text).toBe(
    true,
  );
  // Throws unless one of the signatures is the secret's over id, timestamp and these bytes.
  new Webhook(secret).verify(request.body, signedHeaders(request));
  expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
  return timestamp;
}

const appOf = (name: string) => `http-deliveries-${name}-${randomBytes(3).toString('hex')}`;

describe.concurrent('deliveries over real HTTP: wrangler dev, its local queues, a receiver in this process', () => {
  it('delivers the published bytes, signed (standardwebhooks verifies), webhook-id the event_id; the same id again delivers nothing more', async () => {
    const app = appOf('exact');
    const { id: webhookId, secret } = await register(app, '/exact');
    // Numbers keep the digits they were sent with, even those a double cannot hold.
    const data =
      '{"token_id":"42","amount":123456789012345678901234567890,"price":1.10,"tiny":1e-7,"neg":-0.0,"big":1E400,"list":[1,{"b":null,"t":true}],"name":"Ünïcødé ✓ \\"q\\" \\n"}';
    const eventId = await publish(app, 'NEW_NFT', data, 'exact-1');

    const [first] = await receiver.waitFor('/exact', 1);
    expectDelivery(first as Received, secret, eventId, 'NEW_NFT', data);
    expect((first as Received).body.toString()).toContain('"amount":123456789012345678901234567890,');

    // Published again with the same id: the same event, nothing queued. A later event is the
    // marker: once it arrived, a delivery queued before it would have too.
    expect(await publish(app, 'NEW_NFT', data, 'exact-1')).toBe(eventId);
    const marker = await publish(app, 'MOD_NFT', '{"marker":true}');
    await receiver.waitFor('/exact', 2);
    await sleep(GRACE_MS);
    expect(receiver.requests('/exact').map((r) => r.headers['webhook-id'])).toEqual([eventId, marker]);

    const deliveries = await logUntil(app, webhookId, 'both deliveries recorded as succeeded', (log) =>
      log.every((d) => d.status === 'succeeded'),
    );
    expect(deliveries.filter((d) => d.event_id === eventId).map(pick)).toEqual([
      {
        event_id: eventId,
        status: 'succeeded',
        attempts: 1,
        last_status: 204,
        last_error: null,
        next_attempt_at: null,
      },
    ]);
    expect(deliveries).toHaveLength(2);
  });

  it('retries a receiver that answers 500 twice, then 200: three attempts, one webhook-id, each signed anew; the delivery succeeded', async () => {
    const app = appOf('retry');
    receiver.answer('/flaky', (n) => ({ status: n <= 2 ? 500 : 200 }));
    const { id: webhookId, secret } = await register(app, '/flaky');
    const data = '{"token_id":"7"}';
    const eventId = await publish(app, 'NEW_NFT', data);

    const requests = await receiver.waitFor('/flaky', 3);
    const timestamps = requests.map((r) => expectDelivery(r, secret, eventId, 'NEW_NFT', data));
    // Every attempt sends the same bytes (the body's own timestamp is the event's).
    expect(new Set(timestamps).size).toBe(1);
    expect(new Set(requests.map((r) => r.body.toString())).size).toBe(1);
    // ... with a signature of its own time: webhook-timestamp rises, the signatures differ.
    const signedAt = requests.map((r) => Number(r.headers['webhook-timestamp']));
    expect(signedAt[1]).toBeGreaterThan(signedAt[0] as number);
    expect(signedAt[2]).toBeGreaterThan(signedAt[1] as number);
    expect(new Set(requests.map((r) => r.headers['webhook-signature'])).size).toBe(3);
    // The schedule's 1 s between attempts (it starts when the attempt's batch is done).
    expect((requests[1] as Received).at - (requests[0] as Received).at).toBeGreaterThanOrEqual(900);
    expect((requests[2] as Received).at - (requests[1] as Received).at).toBeGreaterThanOrEqual(900);

    const log = await logUntil(
      app,
      webhookId,
      'the delivery recorded as succeeded',
      (l) => l[0]?.status === 'succeeded',
    );
    const delivery = await withAttempts(app, log, eventId);
    expect(log.map(pick)).toEqual([
      {
        event_id: eventId,
        status: 'succeeded',
        attempts: 3,
        last_status: 200,
        last_error: null,
        next_attempt_at: null,
      },
    ]);
    expect(delivery.attempt_log?.map(({ attempt, status, error }) => ({ attempt, status, error }))).toEqual([
      { attempt: 1, status: 500, error: null },
      { attempt: 2, status: 500, error: null },
      { attempt: 3, status: 200, error: null },
    ]);
    await sleep(GRACE_MS);
    expect(receiver.requests('/flaky')).toHaveLength(3);
  });

  it('does not follow a redirect: a 302 is a failed attempt, its Location never requested', async () => {
    const app = appOf('redirect');
    // The Location is an allowed origin too: only not following keeps it unrequested.
    receiver.answer('/redirect', () => ({ status: 302, headers: { location: receiver.url('/redirect-target') } }));
    receiver.answer('/redirect-target', () => ({ status: 200 }));
    const { id: webhookId } = await register(app, '/redirect');
    const eventId = await publish(app, 'NEW_NFT', '{"token_id":"8"}');

    // The first attempt and the schedule's three retries, then the delivery failed.
    const requests = await receiver.waitFor('/redirect', 4);
    expect(requests.every((r) => r.headers['webhook-id'] === eventId)).toBe(true);
    const deliveries = await logUntil(
      app,
      webhookId,
      'the delivery recorded as failed',
      (l) => l[0]?.status === 'failed',
    );
    expect(deliveries.map(({ status, attempts, last_status }) => ({ status, attempts, last_status }))).toEqual([
      { status: 'failed', attempts: 4, last_status: 302 },
    ]);
    expect(receiver.requests('/redirect')).toHaveLength(4);
    expect(receiver.requests('/redirect-target')).toEqual([]);
  });

  it('disables a webhook whose receiver answers 410 Gone: GET shows is_enabled false, no retry, no new deliveries', async () => {
    const app = appOf('gone');
    receiver.answer('/gone', () => ({ status: 410 }));
    const { id: webhookId } = await register(app, '/gone');
    const eventId = await publish(app, 'NEW_NFT', '{"token_id":"9"}');

    await receiver.waitFor('/gone', 1);
    const webhook = await until('GET to show the webhook disabled', async () => {
      const res = await call('GET', `${PATH}?webhook_id=${webhookId}`, app);
      expect(res.status, res.text).toBe(200);
      const value = JSON.parse(res.text).value as { is_enabled: boolean };
      return value.is_enabled === false ? value : undefined;
    });
    expect(webhook).toMatchObject({ webhook_id: webhookId, is_enabled: false });

    // Disabled now: a new event makes no delivery for it.
    const later = await publish(app, 'NEW_NFT', '{"token_id":"10"}');
    const deliveries = await api.deliveries(app, webhookId);
    const [audit] = await sql(
      `SELECT action, actor, reason FROM webhook_audit WHERE webhook_id = ${webhookId} ORDER BY audit_id`,
    );
    expect(
      deliveries.map(({ event_id, status, attempts, last_status }) => ({ event_id, status, attempts, last_status })),
    ).toEqual([{ event_id: eventId, status: 'failed', attempts: 1, last_status: 410 }]);
    expect(deliveries?.some((d) => d.event_id === later)).toBe(false);
    expect(audit).toEqual([
      { action: 'create', actor: app, reason: null },
      { action: 'disable', actor: 'system', reason: 'the endpoint answered 410 Gone' },
    ]);
    await sleep(GRACE_MS);
    expect(receiver.requests('/gone')).toHaveLength(1);
  });

  it('sends a webhook registered for ["MOD_NFT"] no NEW_NFT event, and its MOD_NFT events', async () => {
    const app = appOf('types');
    const modOnly = await register(app, '/types-mod', ['MOD_NFT']);
    const every = await register(app, '/types-all');
    const newNft = await publish(app, 'NEW_NFT', '{"token_id":"11"}');
    const modNft = await publish(app, 'MOD_NFT', '{"token_id":"11","owner":"0xdef"}');

    // The fan-out is decided when the event is stored: no delivery of NEW_NFT to the MOD_NFT webhook.
    const eventsOf = async (id: number) => (await api.deliveries(app, id)).map((d) => d.event_id).sort();
    expect(await eventsOf(modOnly.id)).toEqual([modNft]);
    expect(await eventsOf(every.id)).toEqual([newNft, modNft].sort());
    // And on the wire: the MOD_NFT event (published after the NEW_NFT one) arrives, the NEW_NFT one never.
    const [mod] = await receiver.waitFor('/types-mod', 1);
    expectDelivery(mod as Received, modOnly.secret, modNft, 'MOD_NFT', '{"token_id":"11","owner":"0xdef"}');
    const all = await receiver.waitFor('/types-all', 2);
    expect(all.map((r) => r.headers['webhook-id']).sort()).toEqual([newNft, modNft].sort());
    await sleep(GRACE_MS);
    expect(receiver.requests('/types-mod').map((r) => r.headers['webhook-id'])).toEqual([modNft]);
  });

  it(`records 'timeout' for a receiver slower than DELIVERY_TIMEOUT_SECONDS, having given up on the request`, async () => {
    const app = appOf('slow');
    const slowMs = (DELIVERY.timeoutSeconds + 1.5) * 1000;
    receiver.answer('/slow', () => ({ status: 200, delayMs: slowMs }));
    const { id: webhookId } = await register(app, '/slow');
    const eventId = await publish(app, 'NEW_NFT', '{"token_id":"12"}');

    const [first] = await receiver.waitFor('/slow', 1);
    const [logged] = await api.deliveries(app, webhookId);
    const deliveryId = logged?.delivery_id as string;
    // Deleted while its first attempt waits: the delivery is cancelled at its next pass, with no
    // second attempt (the retry comes a second after the timeout).
    const res = await call('DELETE', `${PATH}?webhook_id=${webhookId}`, app);
    expect(res.status, res.text).toBe(200);
    // The webhook is gone: its delivery is read by its id (its application's object knows where).
    let last: LoggedDelivery | null = null;
    const delivery = await until(
      () => `the delivery cancelled (last seen: ${JSON.stringify(last)})`,
      async () => {
        last = await api.delivery(app, deliveryId);
        return last !== null && last.status !== 'pending' ? last : undefined;
      },
    );
    expect(delivery).toMatchObject({
      event_id: eventId,
      status: 'cancelled',
      attempts: 1,
      last_status: null,
      last_error: 'timeout',
    });
    const attempts = delivery.attempt_log ?? [];
    expect(attempts.map(({ attempt, status, error }) => ({ attempt, status, error }))).toEqual([
      { attempt: 1, status: null, error: 'timeout' },
    ]);
    const duration = attempts[0]?.duration_ms as number;
    expect(duration).toBeGreaterThanOrEqual(DELIVERY.timeoutSeconds * 1000 - 100);
    expect(duration).toBeLessThan(slowMs);
    // The Worker closed the connection at its timeout, before the receiver answered.
    await until('the receiver to see its request abandoned', () => (first as Received).abandoned, slowMs);
    expect(receiver.requests('/slow')).toHaveLength(1);
  });

  it("sends a FIFO webhook one at a time, in the batch's order; a failing third event holds the rest", async () => {
    const app = appOf('fifo');
    const created = await call('POST', PATH, app, JSON.stringify({ url: receiver.url('/fifo'), ordering: 'fifo' }));
    expect(created.status, created.text).toBe(201);
    const { webhook_id: webhookId, ordering } = JSON.parse(created.text).value as {
      webhook_id: number;
      ordering: string;
    };
    expect(ordering).toBe('fifo');
    const numberOf = (r: Received) => (JSON.parse(r.body.toString('utf8')) as { data: { n: number } }).data.n;
    let thirds = 0;
    receiver.answer('/fifo', (_n, request) => ({
      status: numberOf(request) === 3 && ++thirds <= 2 ? 503 : 200,
      delayMs: 30,
    }));
    const events = Array.from({ length: 20 }, (_, i) => ({
      app_id: app,
      type: 'NEW_NFT',
      id: `f${i + 1}`,
      data: { n: i + 1 },
    }));
    const published = await api.call(
      'POST',
      '/v1.0/platform/nft/events',
      'http-platform',
      JSON.stringify({ events }),
      'events:publish',
    );
    expect(published.status, published.text).toBe(202);

    // While the third waits for its retry, the ones behind it are pending and not attempted.
    const held = await logUntil(app, webhookId, 'the third failed once', (l) => l.some((d) => d.last_status === 503));
    expect(held.filter((d) => d.status === 'succeeded')).toHaveLength(2);
    expect(held.filter((d) => d.attempts === 0).map((d) => d.status)).toEqual(Array(17).fill('pending'));

    const requests = await receiver.waitFor('/fifo', 22, 30_000);
    expect(requests.map(numberOf)).toEqual([1, 2, 3, 3, 3, ...Array.from({ length: 17 }, (_, i) => i + 4)]);
    // One at a time: each request came after the one before it had been answered.
    for (let i = 1; i < requests.length; i++) {
      expect(requests[i]!.at - requests[i - 1]!.at).toBeGreaterThanOrEqual(25);
    }
    await sleep(GRACE_MS);
    expect(receiver.requests('/fifo')).toHaveLength(22);
    const log = await logUntil(
      app,
      webhookId,
      'all 20 succeeded',
      (l) => l.filter((d) => d.status === 'succeeded').length === 20,
    );
    expect(log).toHaveLength(20);
  });
});

describe('the Cron Trigger over HTTP (GET /__scheduled, wrangler dev --test-scheduled)', () => {
  it('runs on a database without the old delivery tables (dropped after the deploy): nothing of the move is left to run', async () => {
    const app = appOf('cron');
    await register(app, '/cron');
    await api.scheduled();
    const [tables] = await sql(
      `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('events', 'deliveries', 'delivery_attempts', 'delivery_stats')`,
    );
    expect(tables).toEqual([]);
    await sleep(GRACE_MS);
    expect(receiver.requests('/cron')).toEqual([]);
  });
});
