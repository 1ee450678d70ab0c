// The Cron Trigger's jobs: Idempotency-Keys purged (tested with registration) and signing secrets
// re-sealed (tested with the key ring), erasures finished (tested with erasure); deliveries need none. Each object keeps its own retention
// (its alarm).
import { createScheduledController, env, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Application } from '../src/events/application';
import worker from '../src/index';
import { countingDb, faultyDb, insertWebhook } from './helpers/database';
import { applicationOf, applicationSql, deliverDue, endpointSql } from './helpers/objects';
import { daysAgo, minutesAgo } from './helpers/time';
import { freshApp } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the Cron Trigger', () => {
  /** Runs it with `overrides`; returns its `cron: ...` log lines, info and error alike. */
  async function cronJobs(overrides: Partial<CloudflareBindings>) {
    const info = vi.spyOn(console, 'info').mockImplementation(() => {});
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    await worker.scheduled(createScheduledController({ cron: '* * * * *' }), { ...env, ...overrides });
    return [...info.mock.calls, ...error.mock.calls]
      .map((c) => JSON.parse(String(c[0])) as { msg: string })
      .filter((l) => l.msg.startsWith('cron: '))
      .map((l) => l.msg);
  }

  it('runs the key purge, the re-sealing and the erasures: two D1 round trips with one key and no erasure', async () => {
    const counted = countingDb(env.DB);
    expect(await cronJobs({ DB: counted.db })).toEqual([
      'cron: expired idempotency keys purged',
      'cron: signing secrets re-sealed',
      'cron: erasures finished',
    ]);
    // With one key there is nothing to re-seal: it reads nothing. The erasures: one read.
    expect(counted.calls()).toBe(2);
  });

  it('runs every job even when one fails, logging the failure', async () => {
    const failing = faultyDb([{ before: 'D1_ERROR: no such table: idempotency_keys' }]);
    expect(await cronJobs({ DB: failing.db })).toEqual([
      'cron: signing secrets re-sealed',
      'cron: erasures finished',
      'cron: expired idempotency keys purged failed',
    ]);
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

    // Kept: the one within the retention (ended 29 days ago, so the same alarm archived it to R2:
    // its slim row stays, its attempts went with it) and the pending one, with its attempt.
    const left = await endpointSql<{ id: number; status: string }>(
      hook,
      `SELECT delivery_id AS id, status FROM deliveries
       UNION ALL SELECT delivery_id, 'archived' FROM archived ORDER BY 1`,
    );
    expect(left).toEqual([
      { id: 100, status: 'archived' },
      { id: 101, status: 'pending' },
    ]);
    expect(await endpointSql(hook, 'SELECT delivery_id AS id FROM delivery_attempts ORDER BY 1')).toEqual([
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
