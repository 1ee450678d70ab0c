import { applyD1Migrations, env, runInDurableObject, SELF } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { purgeDeliveries } from '../src/deliveries/store/retention';
import { countingDb } from './helpers/database';
import { deliverDue, endpointOf, endpointSql } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectEnvelope, expectValue } from './helpers/replies';
import { fetchAndWait, fetchWith, ORIGIN, publishEvent, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const STATS_URL = `${ORIGIN}/v1.0/app/nft/webhook/stats`;
const HOUR = 3_600_000;
const hourOf = (ms: number) => `${new Date(Math.floor(ms / HOUR) * HOUR).toISOString().slice(0, 13)}:00:00Z`;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

interface Counts {
  succeeded: number;
  failed: number;
  pending: number;
  cancelled: number;
  attempts: number;
  failed_attempts: number;
}
interface Stats {
  webhook_id: number;
  last_24h: Counts;
  last_7d: Counts;
  hourly: { hour: string; succeeded: number; failed: number; attempts: number; failed_attempts: number }[];
}

const counts = (c: Partial<Counts> = {}): Counts => ({
  succeeded: 0,
  failed: 0,
  pending: 0,
  cancelled: 0,
  attempts: 0,
  failed_attempts: 0,
  ...c,
});

async function stats(app: string, id: string): Promise<Stats> {
  const res = await SELF.fetch(`${STATS_URL}?webhook_id=${id}`, { headers: bearer(await tokenFor(app)) });
  const { value } = await expectValue<Stats>(res);
  return value;
}

let seq = 0;

/**
 * A delivery stored at the webhook's endpoint with its state, created at `createdAt`, with
 * `attempts` made at the times given (the counters' triggers count it as any other). Returns its id.
 */
async function insertDelivery(
  app: string,
  webhookId: string,
  createdAt: string,
  status = 'succeeded',
  attemptedAt: string[] = [],
) {
  const id = String((BigInt(Date.parse(createdAt) - 1_577_836_800_000) << 20n) + BigInt(++seq));
  const eventId = `evt_${crypto.randomUUID().replaceAll('-', '')}`;
  await runInDurableObject(endpointOf(webhookId), (_instance, state) => {
    state.storage.sql.exec(
      `INSERT INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, attempts,
         last_attempt_at, last_status, created_at)
       VALUES (CAST(?1 AS INTEGER), ?2, ?2, ?3, 'NEW_NFT', '{}', ?4, ?5, ?6, ?7, ?8)`,
      id,
      eventId,
      app,
      status,
      attemptedAt.length,
      attemptedAt.at(-1) ?? null,
      attemptedAt.length > 0 ? 200 : null,
      createdAt,
    );
    attemptedAt.forEach((at, i) => {
      state.storage.sql.exec(
        `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, duration_ms)
         VALUES (CAST(?1 AS INTEGER), ?2, ?3, 200, 5)`,
        id,
        i + 1,
        at,
      );
    });
  });
  return id;
}

describe('GET /v1.0/app/nft/webhook/stats', () => {
  it('counts across publish, attempts, status changes and a recovery', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const empty = await stats(app, id);
    expect(empty).toMatchObject({ webhook_id: Number(id), last_24h: counts(), last_7d: counts() });
    expect(empty.hourly).toHaveLength(24);

    // The requests are held until the counts of three pending deliveries are read; then one
    // answers 200, two answer 500.
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    receiver(async (_req, n) => {
      await gate;
      return new Response('x', { status: n === 1 ? 200 : 500 });
    });
    for (let i = 0; i < 3; i++) await publishEvent(app);
    expect(await stats(app, id)).toMatchObject({ last_24h: counts({ pending: 3 }), last_7d: counts({ pending: 3 }) });

    // One succeeded, two pending again (retrying); three attempts, of which two failed: the
    // failures of deliveries still retrying are counted.
    open();
    await deliverDue(id);
    const afterAttempts = await stats(app, id);
    expect(afterAttempts.last_24h).toEqual(counts({ succeeded: 1, pending: 2, attempts: 3, failed_attempts: 2 }));
    expect(afterAttempts.last_7d).toEqual(afterAttempts.last_24h);
    expect(afterAttempts.hourly.at(-1)).toEqual({
      hour: hourOf(Date.now()),
      succeeded: 1,
      failed: 0,
      attempts: 3,
      failed_attempts: 2,
    });

    // The two end failed (their schedule ran out), then a recovery makes them pending again, and
    // they are attempted once more (500 again: pending, two more attempts).
    await endpointSql(id, `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL WHERE status = 'pending'`);
    const failed = await stats(app, id);
    expect(failed.last_24h).toEqual(counts({ succeeded: 1, failed: 2, attempts: 3, failed_attempts: 2 }));
    expect(failed.hourly.at(-1)).toMatchObject({ succeeded: 1, failed: 2 });
    const recover = await fetchAndWait(
      {},
      new Request(`${ORIGIN}/v1.0/app/nft/webhook/recover`, {
        method: 'POST',
        headers: { ...bearer(await tokenFor(app)), 'content-type': 'application/json' },
        body: JSON.stringify({ webhook_id: id, since: ago(HOUR) }),
      }),
    );
    await expectValue(recover, 202);
    await deliverDue(id);
    expect((await stats(app, id)).last_24h).toEqual(
      counts({ succeeded: 1, pending: 2, attempts: 5, failed_attempts: 4 }),
    );
    // A cancelled delivery counts too (the service cancels a pending one whose webhook went away).
    await endpointSql(
      id,
      `UPDATE deliveries SET status = 'cancelled'
       WHERE delivery_id = (SELECT delivery_id FROM deliveries WHERE status = 'pending' LIMIT 1)`,
    );
    expect((await stats(app, id)).last_24h).toEqual(
      counts({ succeeded: 1, pending: 1, cancelled: 1, attempts: 5, failed_attempts: 4 }),
    );
  });

  it('puts deliveries in the hour they were created and attempts in the hour they were made; 24 hours oldest first, 7 days', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const now = Date.now();
    await insertDelivery(app, id, ago(3 * HOUR), 'succeeded');
    await insertDelivery(app, id, ago(3 * HOUR), 'failed');
    await insertDelivery(app, id, new Date(now - 23 * HOUR - 1000).toISOString(), 'failed');
    // An attempt made two hours ago for a delivery of three days ago counts in that hour.
    await insertDelivery(app, id, ago(3 * 24 * HOUR), 'succeeded', [ago(2 * HOUR)]);
    await insertDelivery(app, id, ago(8 * 24 * HOUR), 'succeeded');
    const s = await stats(app, id);
    expect(s.hourly.map((h) => h.hour)).toEqual(Array.from({ length: 24 }, (_, i) => hourOf(now - (23 - i) * HOUR)));
    expect(s.hourly[20]).toEqual({
      hour: hourOf(now - 3 * HOUR),
      succeeded: 1,
      failed: 1,
      attempts: 0,
      failed_attempts: 0,
    });
    // The delivery of 23 hours and a second ago is in the window's first hour, unless this hour
    // began less than a second ago.
    const inWindow = hourOf(now - 23 * HOUR - 1000) === s.hourly[0]?.hour;
    expect(s.hourly[0]).toMatchObject({ succeeded: 0, failed: inWindow ? 1 : 0 });
    expect(s.hourly.filter((_h, i) => i !== 0 && i !== 20).every((h) => h.succeeded + h.failed === 0)).toBe(true);
    expect(s.last_24h).toEqual(counts({ succeeded: 1, failed: inWindow ? 2 : 1, attempts: 1 }));
    expect(s.last_7d).toEqual(counts({ succeeded: 2, failed: 2, attempts: 1 }));
  });

  it('reads the hourly counters with one D1 round trip, never scanning the deliveries', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    await insertDelivery(app, id, ago(HOUR), 'succeeded');
    await insertDelivery(app, id, ago(HOUR), 'failed');
    const counted = countingDb(env.DB);
    const res = await fetchWith(
      { DB: counted.db },
      new Request(`${STATS_URL}?webhook_id=${id}`, { headers: bearer(await tokenFor(app)) }),
    );
    expect((await expectValue<Stats>(res)).value.last_24h).toMatchObject({ succeeded: 1, failed: 1 });
    expect(counted.calls()).toBe(1);
    // The reply is the counters: deleting the deliveries (no DELETE trigger) leaves the counts; a
    // counter changed by hand shows as it is.
    await endpointSql(id, 'DELETE FROM deliveries');
    expect((await stats(app, id)).last_24h).toMatchObject({ succeeded: 1, failed: 1 });
    await endpointSql(id, 'UPDATE delivery_stats SET succeeded = 5000 WHERE hour = ?1', hourOf(Date.now() - HOUR));
    expect((await stats(app, id)).last_24h.succeeded).toBe(5000);
  });

  it("the endpoint's retention deletes counters past the retention and keeps recent hours exact", async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    await insertDelivery(app, id, ago(40 * 24 * HOUR), 'succeeded');
    await insertDelivery(app, id, ago(2 * HOUR), 'succeeded');
    await insertDelivery(app, id, ago(2 * HOUR), 'failed');
    const rows = () => endpointSql(id, 'SELECT hour, succeeded, failed FROM delivery_stats ORDER BY hour');
    expect(await rows()).toHaveLength(2);
    // What Endpoint.retain runs (DELIVERY_RETENTION_DAYS, 30 by default).
    await runInDurableObject(endpointOf(id), (_instance, state) =>
      purgeDeliveries(state.storage, ago(30 * 24 * HOUR), 1000),
    );
    expect(await rows()).toEqual([{ hour: hourOf(Date.now() - 2 * HOUR), succeeded: 1, failed: 1 }]);
    expect(await endpointSql(id, 'SELECT COUNT(*) AS n FROM deliveries')).toEqual([{ n: 2 }]);
    expect((await stats(app, id)).last_24h).toMatchObject({ succeeded: 1, failed: 1 });
  });

  it('answers 404 for a missing or foreign webhook, 400 for a bad id, 405 for other methods', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const other = bearer(await tokenFor(freshApp()));
    const foreign = await SELF.fetch(`${STATS_URL}?webhook_id=${id}`, { headers: other });
    expect(foreign.headers.get('x-d1-bookmark')).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
    expect(foreign.headers.get('x-error-detail')).toBe('no such webhook for this application');
    await expectEnvelope(foreign, 404, 64060, 'query fail');
    await expectEnvelope(
      await SELF.fetch(`${STATS_URL}?webhook_id=99999999`, { headers: other }),
      404,
      64060,
      'query fail',
    );
    for (const q of ['', 'webhook_id=', 'webhook_id=0', 'webhook_id=1.5', `webhook_id=${id}&webhook_id=${id}`]) {
      const res = await SELF.fetch(`${STATS_URL}?${q}`, { headers: bearer(await tokenFor(app)) });
      expect(res.headers.get('x-error-detail'), q).toBeTruthy();
      await expectEnvelope(res, 400, 64060, 'query fail');
    }
    const post = await SELF.fetch(STATS_URL, { method: 'POST', headers: bearer(await tokenFor(app)) });
    expect(post.headers.get('allow')).toBe('GET');
    await expectEnvelope(post, 405, 405, 'method not allowed');
  });
});

describe('migration 0004 on a database with deliveries', () => {
  it('backfills the counters from the rows already stored, and the triggers count what comes after', async () => {
    const db = env.UPGRADE_DB;
    const upTo3 = env.TEST_MIGRATIONS.filter((m) => !m.name.startsWith('0004'));
    await applyD1Migrations(db, upTo3);
    const t1 = '2026-11-20T10:15:00.000Z';
    const t2 = '2026-11-20T11:45:00.000Z';
    await db.batch([
      db.prepare(`INSERT INTO webhooks (webhook_id, app_id, url) VALUES (7, 'app-m', 'https://m.example.com/')`),
      db
        .prepare(
          `INSERT INTO events (event_id, app_id, type, payload, created_at) VALUES ('e1', 'app-m', 'T', '{}', ?1)`,
        )
        .bind(t1),
      db
        .prepare(
          `INSERT INTO deliveries (event_id, webhook_id, app_id, status, attempts, created_at) VALUES
           ('e1', 7, 'app-m', 'succeeded', 1, ?1), ('e2', 7, 'app-m', 'failed', 2, ?1), ('e3', 7, 'app-m', 'pending', 0, ?2)`,
        )
        .bind(t1, t2),
      db
        .prepare(
          `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, duration_ms) VALUES
           (1, 1, ?1, 200, 3), (2, 1, ?1, 500, 3), (2, 2, ?2, 500, 3)`,
        )
        .bind(t1, t2),
    ]);
    await applyD1Migrations(db, env.TEST_MIGRATIONS);
    const rows = async () =>
      (
        await db
          .prepare(
            'SELECT webhook_id, hour, pending, succeeded, failed, cancelled, attempts FROM delivery_stats ORDER BY hour',
          )
          .all()
      ).results;
    expect(await rows()).toEqual([
      { webhook_id: 7, hour: '2026-11-20T10:00:00Z', pending: 0, succeeded: 1, failed: 1, cancelled: 0, attempts: 2 },
      { webhook_id: 7, hour: '2026-11-20T11:00:00Z', pending: 1, succeeded: 0, failed: 0, cancelled: 0, attempts: 1 },
    ]);
    // What the release before writes after the migration is counted by the triggers.
    await db.batch([
      db.prepare(`UPDATE deliveries SET status = 'succeeded', attempts = 1 WHERE delivery_id = 3`),
      db
        .prepare(
          `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, duration_ms) VALUES (3, 1, ?1, 200, 3)`,
        )
        .bind(t2),
    ]);
    expect((await rows())[1]).toEqual({
      webhook_id: 7,
      hour: '2026-11-20T11:00:00Z',
      pending: 0,
      succeeded: 1,
      failed: 0,
      cancelled: 0,
      attempts: 2,
    });
  });
});
