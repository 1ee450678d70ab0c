// The Cron Trigger now: the move of the release before's rows from D1 to the objects, in two steps
// (claim, then move once no attempt of that release can still be running), and the objects'
// own retention (their alarms; no Cron needed).
import { createScheduledController, env, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Application } from '../src/events/application';
import worker from '../src/index';
import { insertWebhook } from './helpers/database';
import {
  applicationOf,
  applicationSql,
  deliverDue,
  endpointSql,
  storedAttempts,
  storedDelivery,
} from './helpers/objects';
import { consume } from './helpers/queues';
import { receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { eventRequest, fetchAndWait, readLog } from './helpers/requests';
import { daysAgo, minutesAgo } from './helpers/time';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const runCron = (overrides: Record<string, unknown> = {}) =>
  worker.scheduled(createScheduledController({ cron: '* * * * *' }), { ...env, ...overrides });

const count = async (table: string, appId: string) =>
  env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE app_id = ?1`).bind(appId).first<number>('n');
const attemptsInD1 = (ids: string[]) =>
  env.DB.prepare(
    'SELECT COUNT(*) AS n FROM delivery_attempts WHERE delivery_id IN (SELECT CAST(value AS INTEGER) FROM json_each(?1))',
  )
    .bind(JSON.stringify(ids))
    .first<number>('n');

/**
 * What the release before left in D1 for one application: an event with a source key and three
 * deliveries of it (pending and due, succeeded with its attempt, failed after two attempts), and
 * an event without deliveries. Returns their ids.
 */
async function legacyRows(appId: string, hookId: string) {
  const eventId = `evt_${crypto.randomUUID().replaceAll('-', '')}`;
  const lonely = `evt_${crypto.randomUUID().replaceAll('-', '')}`;
  const created = minutesAgo(30);
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO events (event_id, app_id, source_key, type, payload, created_at)
       VALUES (?1, ?2, 'id:old-1', 'NEW_NFT', '{"type":"NEW_NFT","data":{"old":true}}', ?3),
              (?4, ?2, 'id:old-2', 'NEW_NFT', '{}', ?3)`,
    ).bind(eventId, appId, created, lonely),
  ]);
  const insert = (status: string, attempts: number, next: string | null, webhookId: string) =>
    env.DB.prepare(
      `INSERT INTO deliveries (event_id, webhook_id, app_id, status, attempts, next_attempt_at, last_attempt_at,
         last_status, created_at)
       VALUES (?1, CAST(?2 AS INTEGER), ?3, ?4, ?5, ?6, CASE WHEN ?5 > 0 THEN ?7 END, CASE WHEN ?5 > 0 THEN 500 END, ?7)
       RETURNING CAST(delivery_id AS TEXT) AS id`,
    )
      .bind(eventId, webhookId, appId, status, attempts, next, created)
      .first<{ id: string }>()
      .then((row) => row!.id);
  // Three webhooks' worth: the same event to three endpoints of the application.
  const hooks = [
    hookId,
    await insertWebhook(appId, { url: `https://${appId}.example/b` }),
    await insertWebhook(appId, { url: `https://${appId}.example/c` }),
  ];
  const pending = await insert('pending', 1, minutesAgo(1), hooks[0]!);
  const succeeded = await insert('succeeded', 1, null, hooks[1]!);
  const failed = await insert('failed', 2, null, hooks[2]!);
  await env.DB.prepare(
    `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
     VALUES (CAST(?1 AS INTEGER), 1, ?4, 500, NULL, 12, 'busy'),
            (CAST(?2 AS INTEGER), 1, ?4, 200, NULL, 7, 'ok'),
            (CAST(?3 AS INTEGER), 1, ?4, NULL, 'timeout', 15000, NULL),
            (CAST(?3 AS INTEGER), 2, ?4, 404, NULL, 9, 'no')`,
  )
    .bind(pending, succeeded, failed, created)
    .run();
  return { eventId, lonely, hooks, pending, succeeded, failed };
}

describe('the Cron Trigger: the move from D1 to the objects', () => {
  it('claims first, moves once a claim is old enough, and leaves D1 empty with every row as it was', async () => {
    const app = freshApp();
    const hook = await insertWebhook(app, { url: `https://${app}.example/hook` });
    const rows = await legacyRows(app, hook);
    const ids = [rows.pending, rows.succeeded, rows.failed];
    const before = await env.DB.prepare(
      `SELECT CAST(delivery_id AS TEXT) AS delivery_id, event_id, status, attempts, last_attempt_at, last_status, created_at
       FROM deliveries WHERE app_id = ?1 ORDER BY delivery_id`,
    )
      .bind(app)
      .all();

    // First run: claimed, not moved: the release before may still be attempting them.
    await runCron();
    const claimed = await env.DB.prepare(
      `SELECT status, next_attempt_at, move_due_at, move_claimed_at, queue_gen FROM deliveries
       WHERE delivery_id = CAST(?1 AS INTEGER)`,
    )
      .bind(rows.pending)
      .first<Record<string, unknown>>();
    expect(claimed).toMatchObject({ status: 'pending', next_attempt_at: null, queue_gen: 1 });
    expect(claimed?.move_due_at).not.toBeNull();
    expect(await count('deliveries', app)).toBe(3);
    expect(await storedDelivery(rows.hooks[0]!, rows.pending)).toBeUndefined();

    // A claim older than two timeouts and a half minute: moved.
    await env.DB.prepare('UPDATE deliveries SET move_claimed_at = ?2 WHERE app_id = ?1').bind(app, minutesAgo(5)).run();
    const { requests } = receiver(() => new Response('ok'));
    await runCron();

    expect(await count('deliveries', app)).toBe(0);
    expect(await count('events', app)).toBe(0);
    expect(await attemptsInD1(ids)).toBe(0);
    for (const [i, id] of ids.entries()) {
      const moved = await storedDelivery(rows.hooks[i]!, id);
      const old = before.results[i] as Record<string, unknown>;
      expect(moved).toMatchObject({ delivery_id: old.delivery_id, event_id: old.event_id, created_at: old.created_at });
    }
    expect(await storedAttempts(rows.hooks[2]!, rows.failed)).toEqual([
      {
        attempt: 1,
        attempted_at: before.results[2]?.created_at,
        status: null,
        error: 'timeout',
        duration_ms: 15000,
        body: null,
      },
      { attempt: 2, attempted_at: before.results[2]?.created_at, status: 404, error: null, duration_ms: 9, body: 'no' },
    ]);
    expect(await storedDelivery(rows.hooks[2]!, rows.failed)).toMatchObject({ status: 'failed', attempts: 2 });
    expect(await storedDelivery(rows.hooks[1]!, rows.succeeded)).toMatchObject({ status: 'succeeded', attempts: 1 });
    // The application's object knows both events (source keys) and where each delivery is.
    const events = await applicationSql<{ event_id: string; source_key: string }>(
      app,
      'SELECT event_id, source_key FROM events ORDER BY source_key',
    );
    expect(events).toEqual([
      { event_id: rows.eventId, source_key: 'id:old-1' },
      { event_id: rows.lonely, source_key: 'id:old-2' },
    ]);
    expect(await applicationOf(app).locate(rows.failed)).toBe(rows.hooks[2]);

    // The pending one is sent by its endpoint's alarm, once: its second attempt.
    await deliverDue(rows.hooks[0]!);
    expect(requests.filter((r) => r.url === `https://${app}.example/hook`)).toHaveLength(1);
    expect(await storedDelivery(rows.hooks[0]!, rows.pending)).toMatchObject({ status: 'succeeded', attempts: 2 });

    // The delivery log shows the old delivery with its attempts as they were.
    const res = await readLog(`delivery_id=${rows.failed}`, bearer(await tokenFor(app)));
    const { value } = await expectValue<{ delivery_id: number; event_id: string; attempt_log: unknown[] }>(res, 200, {
      usedD1: false,
    });
    expect(String(value.delivery_id)).toBe(rows.failed);
    expect(value.event_id).toBe(rows.eventId);
    expect(value.attempt_log).toHaveLength(2);

    // A run more changes nothing.
    await runCron();
    expect(await endpointSql(rows.hooks[2]!, 'SELECT COUNT(*) AS n FROM delivery_attempts')).toEqual([{ n: 2 }]);
  });

  it('answers an id published under the release before with its event, and delivers nothing again, before and after the move', async () => {
    const app = freshApp();
    const hook = await insertWebhook(app, { url: `https://${app}.example/hook` });
    const rows = await legacyRows(app, hook);
    const publish = async () => {
      const res = await fetchAndWait(
        {},
        eventRequest({ app_id: app, type: 'NEW_NFT', data: {}, id: 'old-1' }, bearer(await platformToken())),
      );
      return (await expectValue<{ event_id: string }>(res, 202)).value.event_id;
    };
    receiver(() => new Response('ok'));
    expect(await publish()).toBe(rows.eventId);
    await runCron();
    await env.DB.prepare('UPDATE deliveries SET move_claimed_at = ?2 WHERE app_id = ?1').bind(app, minutesAgo(5)).run();
    await runCron();
    expect(await count('events', app)).toBe(0);
    expect(await publish()).toBe(rows.eventId);
    // Nothing new at the endpoint: only the moved delivery.
    expect(await endpointSql(hook, 'SELECT COUNT(*) AS n FROM deliveries')).toEqual([{ n: 1 }]);
  });

  it('acknowledges what is left in the old deliveries queue, without a request', async () => {
    const { requests } = receiver();
    const { result } = await consume('nft-webhook-deliveries', [
      { delivery_id: '1' },
      { delivery_id: '2', gen: 3 },
      'junk',
    ]);
    expect(result.explicitAcks.length + (result.ackAll ? 3 : 0)).toBeGreaterThanOrEqual(3);
    expect(result.retryMessages).toEqual([]);
    expect(requests).toHaveLength(0);
  });
});

describe('retention: each object deletes what is past DELIVERY_RETENTION_DAYS itself', () => {
  it('an endpoint deletes ended deliveries with their attempts and old counters, and keeps a pending one until it ends', async () => {
    const app = freshApp();
    const hook = await insertWebhook(app, { url: `https://${app}.example/hook` });
    const insert = (id: number, status: string, created: string) =>
      endpointSql(
        hook,
        `INSERT INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, next_attempt_at, created_at)
         VALUES (?1, 'evt_' || ?1, 'evt_' || ?1, ?2, 'NEW_NFT', '{}', ?3, CASE WHEN ?3 = 'pending' THEN ?5 END, ?4)`,
        id,
        app,
        status,
        created,
        minutesAgo(-60),
      );
    await endpointSql(hook, `INSERT OR IGNORE INTO endpoint (key, value) VALUES ('webhook_id', ?1)`, hook);
    for (let i = 1; i <= 30; i++) await insert(i, 'failed', daysAgo(31));
    await insert(100, 'succeeded', daysAgo(29));
    await insert(101, 'pending', daysAgo(40));
    await endpointSql(
      hook,
      `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, duration_ms)
       SELECT delivery_id, 1, created_at, 500, 1 FROM deliveries`,
    );

    await deliverDue(hook);

    const left = await endpointSql<{ id: number; status: string }>(
      hook,
      'SELECT delivery_id AS id, status FROM deliveries ORDER BY delivery_id',
    );
    expect(left).toEqual([
      { id: 100, status: 'succeeded' },
      { id: 101, status: 'pending' },
    ]);
    expect(await endpointSql(hook, 'SELECT delivery_id AS id FROM delivery_attempts ORDER BY 1')).toEqual([
      { id: 100 },
      { id: 101 },
    ]);
    const hours = await endpointSql<{ hour: string }>(hook, 'SELECT hour FROM delivery_stats ORDER BY hour');
    expect(hours.every((h) => h.hour >= daysAgo(30).slice(0, 13))).toBe(true);
  });

  it('an application deletes events and index rows past the retention when its alarm rings', async () => {
    const app = freshApp();
    await applicationSql(
      app,
      `INSERT INTO events (event_id, source_key, created_at) VALUES ('evt_old', 'id:a', ?1), ('evt_new', 'id:b', ?2)`,
      daysAgo(31),
      daysAgo(1),
    );
    await applicationSql(
      app,
      `INSERT INTO deliveries (delivery_id, webhook_id, created_at) VALUES (1, '7', ?1), (2, '7', ?2)`,
      daysAgo(31),
      daysAgo(1),
    );
    await runInDurableObject(applicationOf(app), (instance: Application) => instance.alarm());
    expect(await applicationSql(app, 'SELECT event_id FROM events')).toEqual([{ event_id: 'evt_new' }]);
    expect(await applicationSql(app, 'SELECT delivery_id FROM deliveries')).toEqual([{ delivery_id: 2 }]);
  });
});
