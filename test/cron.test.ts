import { createScheduledController, env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import worker from '../src/index';
import { fakeQueue } from './helpers/queues';
import { daysAgo, minutesAgo } from './helpers/time';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Inserts an event and one delivery of it per entry; returns the deliveries' ids. */
async function insertDeliveries(
  rows: { status: string; next: string | null; created?: string }[],
  eventId = `evt_${crypto.randomUUID().replaceAll('-', '')}`,
): Promise<string[]> {
  const created = rows[0]?.created ?? new Date().toISOString();
  await env.DB.prepare(
    `INSERT INTO events (event_id, app_id, type, payload, created_at) VALUES (?1, 'cron-app', 'NEW_NFT', '{}', ?2)`,
  )
    .bind(eventId, created)
    .run();
  const ids = [];
  for (const [i, row] of rows.entries()) {
    const inserted = await env.DB.prepare(
      `INSERT INTO deliveries (event_id, webhook_id, app_id, status, next_attempt_at, created_at)
       VALUES (?1, ?2, 'cron-app', ?3, ?4, ?5) RETURNING CAST(delivery_id AS TEXT) AS id`,
    )
      .bind(eventId, i + 1, row.status, row.next, row.created ?? created)
      .first<{ id: string }>();
    ids.push(inserted!.id);
  }
  return ids;
}

const runCron = (overrides: Record<string, unknown> = {}) =>
  worker.scheduled(createScheduledController({ cron: '* * * * *' }), { ...env, ...overrides });

describe('the Cron Trigger: lost messages', () => {
  it('queues again every pending delivery more than DELIVERY_REQUEUE_AFTER_SECONDS overdue, and no other', async () => {
    const [lost, late, due, succeeded, failed, cancelled] = await insertDeliveries([
      { status: 'pending', next: minutesAgo(6) },
      { status: 'pending', next: minutesAgo(4) },
      { status: 'pending', next: minutesAgo(-10) },
      { status: 'succeeded', next: minutesAgo(60) },
      { status: 'failed', next: minutesAgo(60) },
      { status: 'cancelled', next: minutesAgo(60) },
    ]);
    const queue = fakeQueue();
    await runCron({ DELIVERIES: queue.binding });
    // In a new queue generation: the lost message, should it turn up, is dropped.
    expect(queue.sent).toEqual([{ delivery_id: lost, gen: 1 }]);
    // Marked due now: the next run does not queue it again before it is overdue once more.
    const next = await env.DB.prepare('SELECT next_attempt_at FROM deliveries WHERE delivery_id = ?1')
      .bind(lost)
      .first<string>('next_attempt_at');
    expect(Date.now() - Date.parse(next!)).toBeLessThan(5000);
    await runCron({ DELIVERIES: queue.binding });
    expect(queue.sent).toHaveLength(1);
    // A shorter setting finds the other late one.
    await runCron({ DELIVERIES: queue.binding, DELIVERY_REQUEUE_AFTER_SECONDS: '60' });
    expect(queue.sent).toEqual([
      { delivery_id: lost, gen: 1 },
      { delivery_id: late, gen: 1 },
    ]);
    expect([due, succeeded, failed, cancelled]).toHaveLength(4);
  });

  it('queues every overdue delivery, past one statement of 100', async () => {
    await env.DB.prepare("UPDATE deliveries SET status = 'succeeded' WHERE status = 'pending'").run();
    const ids = await insertDeliveries(
      Array.from({ length: 250 }, () => ({ status: 'pending', next: minutesAgo(30) })),
    );
    const queue = fakeQueue();
    await runCron({ DELIVERIES: queue.binding });
    expect((queue.sent as { delivery_id: string }[]).map((m) => m.delivery_id).sort()).toEqual([...ids].sort());
  });
});

describe('the Cron Trigger: retention', () => {
  it('purges events, deliveries and attempts older than DELIVERY_RETENTION_DAYS, every one of them, and keeps the rest', async () => {
    await env.DB.batch([
      env.DB.prepare('DELETE FROM delivery_attempts'),
      env.DB.prepare('DELETE FROM deliveries'),
      env.DB.prepare('DELETE FROM events'),
    ]);
    // More than two statements' worth of old deliveries (1,000 each), with attempts, and old events without any.
    await env.DB.batch([
      env.DB.prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
         INSERT INTO events (event_id, app_id, type, payload, created_at)
         SELECT 'old-' || i, 'retention-app', 'NEW_NFT', '{}', ?1 FROM n`,
      ).bind(daysAgo(31)),
      env.DB.prepare(
        `INSERT INTO deliveries (event_id, webhook_id, app_id, status, created_at)
         SELECT event_id, 1, 'retention-app', 'failed', created_at FROM events WHERE event_id LIKE 'old-%' AND CAST(substr(event_id, 5) AS INTEGER) <= 2200`,
      ),
      env.DB.prepare(
        `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, duration_ms)
         SELECT delivery_id, a.value, created_at, 500, 1 FROM deliveries, json_each('[1,2]') AS a`,
      ),
    ]);
    const [recent] = await insertDeliveries(
      [{ status: 'succeeded', next: null, created: daysAgo(29) }],
      'recent-event',
    );
    // Old but still pending (recovered late in its life): kept until it ends, with its event.
    const [stillPending] = await insertDeliveries(
      [{ status: 'pending', next: minutesAgo(-60), created: daysAgo(40) }],
      'old-pending',
    );
    await env.DB.prepare(
      `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, duration_ms) VALUES (?1, 1, ?2, 200, 1)`,
    )
      .bind(recent, daysAgo(29))
      .run();

    await runCron();

    const count = (table: string) => env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table}`).first<number>('n');
    expect(await count('events')).toBe(2);
    expect(await count('deliveries')).toBe(2);
    expect(await count('delivery_attempts')).toBe(1);
    const events = await env.DB.prepare('SELECT event_id FROM events ORDER BY event_id').all();
    expect(events.results).toEqual([{ event_id: 'old-pending' }, { event_id: 'recent-event' }]);
    expect(
      await env.DB.prepare('SELECT status FROM deliveries WHERE delivery_id = ?1').bind(stillPending).first('status'),
    ).toBe('pending');
  });
});
