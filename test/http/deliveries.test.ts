// Deliveries end to end over real sockets: webhooks registered through the API at a receiver in
// this process, events published over HTTP to `wrangler dev`, its real local queues carrying the
// deliveries and its consumer POSTing them here; what arrives is checked byte for byte and verified
// with `standardwebhooks`, and what the Worker recorded is read from its local D1.
// Each test has an application (and receiver paths) of its own, so they can run at once.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PATH, tokenFor } from './client';
import { type Received, type Receiver, signedHeaders, sleep, startReceiver, until } from './receiver';
import { DELIVERY, wranglerAsync } from './wrangler-dev';

const base = inject('baseUrl');
const EVENT_PATH = '/v1.0/platform/nft/event';
/** After the request that shows the queue has passed a point, how long a request that should not come is given. */
const GRACE_MS = 1500;

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver(inject('receiverPort'));
});
afterAll(() => receiver?.close());

let sqlQueue: Promise<unknown> = Promise.resolve();

/**
 * Runs SQL on the Worker's local D1, which the running wrangler dev shares; the rows of each
 * statement. Without blocking (the receiver keeps answering), one statement list at a time, and
 * again when the database was locked by the Worker's own write (SQLITE_BUSY).
 */
function sql(command: string): Promise<Record<string, unknown>[][]> {
  const args = ['d1', 'execute', 'DB', '--local', '--persist-to', inject('persistTo'), '--json', '--command', command];
  const run = async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        const out = await wranglerAsync(args);
        return (JSON.parse(out) as { results: Record<string, unknown>[] }[]).map((r) => r.results);
      } catch (err) {
        if (attempt >= 5 || !/SQLITE_BUSY|database is locked/.test(String(err))) throw err;
        await sleep(200 * attempt);
      }
    }
  };
  const result = sqlQueue.then(run, run);
  sqlQueue = result.catch(() => undefined);
  return result;
}

/**
 * Polls the D1 until the rows of `query`'s first statement satisfy `done`; the rows of each
 * statement. A poll takes seconds (a wrangler process), so the first waits a little for the Worker
 * to record what the receiver saw.
 */
async function sqlUntil(
  what: string,
  query: string,
  done: (rows: Record<string, unknown>[]) => boolean,
  timeoutMs = 30_000,
) {
  let last: unknown;
  await sleep(1000);
  return until(
    () => `${what} (last seen: ${JSON.stringify(last)})`,
    async () => {
      const results = await sql(query);
      last = results[0];
      return done(results[0] ?? []) ? results : undefined;
    },
    timeoutMs,
    500,
  );
}

async function call(method: string, path: string, token: string, body?: string) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body,
  });
  return { status: res.status, text: await res.text() };
}

/** Registers a webhook of `appId` at the receiver's `path`; its id and signing secret. */
async function register(appId: string, path: string, eventTypes?: string[]) {
  const res = await call(
    'POST',
    PATH,
    await tokenFor(appId),
    JSON.stringify({ url: receiver.url(path), ...(eventTypes ? { event_types: eventTypes } : {}) }),
  );
  expect(res.status, res.text).toBe(201);
  const { webhook_id: id, secret } = JSON.parse(res.text).value as { webhook_id: number; secret: string };
  expect(secret).toMatch(/^whsec_/);
  return { id, secret };
}

/** Publishes an event over HTTP: `data` is raw JSON text, sent as it is. Answers its event_id. */
async function publish(appId: string, type: string, data: string, id?: string): Promise<string> {
  const body = `{"app_id":${JSON.stringify(appId)},"type":${JSON.stringify(type)},${id === undefined ? '' : `"id":${JSON.stringify(id)},`}"data":${data}}`;
  const res = await call('POST', EVENT_PATH, await tokenFor('http-platform', 'events:publish'), body);
  expect(res.status, res.text).toBe(202);
  const match = /^\{"return":0,"message":"success","value":\{"event_id":"(evt_[0-9a-f]{32})"\}\}$/.exec(res.text);
  expect(match, res.text).not.toBeNull();
  return match?.[1] as string;
}

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

const quoted = (text: string) => `'${text.replaceAll("'", "''")}'`;
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

    const [deliveries = []] = await sql(
      `SELECT event_id, webhook_id, status, attempts, last_status, last_error FROM deliveries
       WHERE app_id = ${quoted(app)} ORDER BY delivery_id`,
    );
    expect(deliveries.filter((d) => d.event_id === eventId)).toEqual([
      {
        event_id: eventId,
        webhook_id: webhookId,
        status: 'succeeded',
        attempts: 1,
        last_status: 204,
        last_error: null,
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

    const [deliveries, attempts] = await sqlUntil(
      'the delivery recorded as succeeded',
      `SELECT webhook_id, status, attempts, last_status, last_error, next_attempt_at FROM deliveries WHERE event_id = ${quoted(eventId)};
       SELECT a.attempt, a.status, a.error FROM delivery_attempts a JOIN deliveries d USING (delivery_id)
       WHERE d.event_id = ${quoted(eventId)} ORDER BY a.attempt`,
      (rows) => rows[0]?.status === 'succeeded',
    );
    expect(deliveries).toEqual([
      {
        webhook_id: webhookId,
        status: 'succeeded',
        attempts: 3,
        last_status: 200,
        last_error: null,
        next_attempt_at: null,
      },
    ]);
    expect(attempts).toEqual([
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
    await register(app, '/redirect');
    const eventId = await publish(app, 'NEW_NFT', '{"token_id":"8"}');

    // The first attempt and the schedule's three retries, then the delivery failed.
    const requests = await receiver.waitFor('/redirect', 4);
    expect(requests.every((r) => r.headers['webhook-id'] === eventId)).toBe(true);
    const [deliveries] = await sqlUntil(
      'the delivery recorded as failed',
      `SELECT status, attempts, last_status FROM deliveries WHERE event_id = ${quoted(eventId)}`,
      (rows) => rows[0]?.status === 'failed',
    );
    expect(deliveries).toEqual([{ status: 'failed', attempts: 4, last_status: 302 }]);
    expect(receiver.requests('/redirect')).toHaveLength(4);
    expect(receiver.requests('/redirect-target')).toEqual([]);
  });

  it('disables a webhook whose receiver answers 410 Gone: GET shows is_enabled false, no retry, no new deliveries', async () => {
    const app = appOf('gone');
    receiver.answer('/gone', () => ({ status: 410 }));
    const { id: webhookId } = await register(app, '/gone');
    const token = await tokenFor(app);
    const eventId = await publish(app, 'NEW_NFT', '{"token_id":"9"}');

    await receiver.waitFor('/gone', 1);
    const webhook = await until('GET to show the webhook disabled', async () => {
      const res = await call('GET', `${PATH}?webhook_id=${webhookId}`, token);
      expect(res.status, res.text).toBe(200);
      const value = JSON.parse(res.text).value as { is_enabled: boolean };
      return value.is_enabled === false ? value : undefined;
    });
    expect(webhook).toMatchObject({ webhook_id: webhookId, is_enabled: false });

    // Disabled now: a new event makes no delivery for it.
    const later = await publish(app, 'NEW_NFT', '{"token_id":"10"}');
    const [deliveries, audit] = await sql(
      `SELECT event_id, status, attempts, last_status FROM deliveries WHERE webhook_id = ${webhookId};
       SELECT action, actor, reason FROM webhook_audit WHERE webhook_id = ${webhookId} ORDER BY audit_id`,
    );
    expect(deliveries).toEqual([{ event_id: eventId, status: 'failed', attempts: 1, last_status: 410 }]);
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
    const [deliveries] = await sql(
      `SELECT event_id, webhook_id FROM deliveries WHERE app_id = ${quoted(app)} ORDER BY event_id = ${quoted(newNft)} DESC, webhook_id`,
    );
    expect(deliveries).toEqual([
      { event_id: newNft, webhook_id: every.id },
      { event_id: modNft, webhook_id: modOnly.id },
      { event_id: modNft, webhook_id: every.id },
    ]);
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
    // Deleted while its first attempt waits: the delivery is cancelled at its next message, with
    // no second attempt (the retry comes a second after the timeout).
    const res = await call('DELETE', `${PATH}?webhook_id=${webhookId}`, await tokenFor(app));
    expect(res.status, res.text).toBe(200);
    const [deliveries, attempts = []] = await sqlUntil(
      'the delivery cancelled',
      `SELECT status, attempts, last_status, last_error FROM deliveries WHERE event_id = ${quoted(eventId)};
       SELECT a.attempt, a.status, a.error, a.duration_ms FROM delivery_attempts a JOIN deliveries d USING (delivery_id)
       WHERE d.event_id = ${quoted(eventId)} ORDER BY a.attempt`,
      (rows) => rows[0]?.status !== undefined && rows[0].status !== 'pending',
    );
    expect(deliveries).toEqual([{ status: 'cancelled', attempts: 1, last_status: null, last_error: 'timeout' }]);
    expect(attempts).toEqual([{ attempt: 1, status: null, error: 'timeout', duration_ms: expect.any(Number) }]);
    const duration = attempts[0]?.duration_ms as number;
    expect(duration).toBeGreaterThanOrEqual(DELIVERY.timeoutSeconds * 1000 - 100);
    expect(duration).toBeLessThan(slowMs);
    // The Worker closed the connection at its timeout, before the receiver answered.
    await until('the receiver to see its request abandoned', () => (first as Received).abandoned, slowMs);
    expect(receiver.requests('/slow')).toHaveLength(1);
  });
});

describe('the Cron Trigger over HTTP (GET /__scheduled, wrangler dev --test-scheduled)', () => {
  it('queues a delivery whose message was lost again, and only overdue pending ones', async () => {
    const app = appOf('cron');
    const { id: webhookId, secret } = await register(app, '/cron');
    // Stored by SQL, so no queue message exists for them: as if the message had been lost.
    const now = new Date().toISOString();
    const id = () => `evt_${randomBytes(16).toString('hex')}`;
    const [lost, notYet, ended] = [id(), id(), id()];
    const payload = (eventId: string) => `{"type":"NEW_NFT","timestamp":"${now}","data":{"event":"${eventId}"}}`;
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    const longAgo = '2000-01-01T00:00:00.000Z';
    await sql(
      [lost, notYet, ended]
        .map(
          (eventId) =>
            `INSERT INTO events (event_id, app_id, type, payload, created_at)
             VALUES (${quoted(eventId)}, ${quoted(app)}, 'NEW_NFT', ${quoted(payload(eventId))}, ${quoted(now)})`,
        )
        .concat(
          `INSERT INTO deliveries (event_id, webhook_id, app_id, status, next_attempt_at) VALUES
             (${quoted(lost)}, ${webhookId}, ${quoted(app)}, 'pending', ${quoted(now)}),
             (${quoted(notYet)}, ${webhookId}, ${quoted(app)}, 'pending', ${quoted(inAnHour)}),
             (${quoted(ended)}, ${webhookId}, ${quoted(app)}, 'failed', ${quoted(longAgo)})`,
          // Overdue by far more than DELIVERY_REQUEUE_AFTER_SECONDS.
          `UPDATE deliveries SET next_attempt_at = ${quoted(longAgo)} WHERE event_id = ${quoted(lost)} AND status = 'pending'`,
        )
        .join(';\n'),
    );
    await sleep(GRACE_MS);
    expect(receiver.requests('/cron')).toEqual([]);

    const res = await fetch(`${base}/__scheduled`);
    expect(res.status, await res.text()).toBe(200);

    const [request] = await receiver.waitFor('/cron', 1);
    expect((request as Received).headers['webhook-id']).toBe(lost);
    expect((request as Received).body.toString()).toBe(payload(lost));
    new Webhook(secret).verify((request as Received).body, signedHeaders(request as Received));

    const [rows] = await sqlUntil(
      'the recovered delivery recorded as succeeded',
      `SELECT event_id, status, attempts, next_attempt_at FROM deliveries WHERE app_id = ${quoted(app)} ORDER BY delivery_id`,
      (r) => r[0]?.status === 'succeeded',
    );
    expect(rows).toEqual([
      { event_id: lost, status: 'succeeded', attempts: 1, next_attempt_at: null },
      { event_id: notYet, status: 'pending', attempts: 0, next_attempt_at: inAnHour },
      { event_id: ended, status: 'failed', attempts: 0, next_attempt_at: longAgo },
    ]);
    await sleep(GRACE_MS);
    expect(receiver.requests('/cron').map((r) => r.headers['webhook-id'])).toEqual([lost]);
  });
});
