// What the Cron Trigger asks of the deliveries' store: overdue deliveries taken to be queued
// again, and what is past the retention deleted. One round trip each.
import type { Db } from '../../platform/d1';
import type { QueuedDelivery } from '../../platform/queues';

/**
 * Pending deliveries whose next attempt is due since `overdueSince` or earlier (their queue
 * message was lost, or the Worker died mid-batch), at most `limit`: marked due `now` (so the
 * next run does not take them again before they are overdue once more), in a new queue
 * generation (the lost message, should it turn up, is then dropped), and returned.
 */
export async function takeOverdue(db: Db, overdueSince: string, now: string, limit: number): Promise<QueuedDelivery[]> {
  const { results } = await db
    .prepare(
      `UPDATE deliveries SET next_attempt_at = ?2, queue_gen = queue_gen + 1
       WHERE delivery_id IN (
         SELECT delivery_id FROM deliveries
         WHERE status = 'pending' AND next_attempt_at <= ?1
         ORDER BY next_attempt_at LIMIT ?3)
       RETURNING CAST(delivery_id AS TEXT) AS id, queue_gen AS gen`,
    )
    .bind(overdueSince, now, limit)
    .all<QueuedDelivery>();
  return results;
}

/**
 * Deletes deliveries created before `before` that have ended, with their attempts, then the events
 * left without deliveries, and the hourly counters (delivery_stats) of hours that ended before
 * `before`'s hour, at most `limit` of each per call; returns how many rows went. A delivery still
 * pending (recovered late in its life) stays until it ends. Deleting deliveries never touches the
 * counters (there is no DELETE trigger): the counts of recent hours stay as they are.
 */
export async function purgeOldDeliveries(db: Db, before: string, limit: number): Promise<number> {
  const old = `SELECT delivery_id FROM deliveries
    WHERE created_at < ?1 AND status <> 'pending' ORDER BY created_at, delivery_id LIMIT ?2`;
  const results = await db.batch([
    db.prepare(`DELETE FROM delivery_attempts WHERE delivery_id IN (${old})`).bind(before, limit),
    db.prepare(`DELETE FROM deliveries WHERE delivery_id IN (${old})`).bind(before, limit),
    db
      .prepare(
        `DELETE FROM events WHERE event_id IN (
           SELECT event_id FROM events
           WHERE created_at < ?1 AND NOT EXISTS (SELECT 1 FROM deliveries WHERE deliveries.event_id = events.event_id)
           ORDER BY created_at LIMIT ?2)`,
      )
      .bind(before, limit),
    db
      .prepare(
        `DELETE FROM delivery_stats WHERE (webhook_id, hour) IN (
           SELECT webhook_id, hour FROM delivery_stats
           WHERE hour < substr(?1, 1, 13) || ':00:00Z' ORDER BY hour LIMIT ?2)`,
      )
      .bind(before, limit),
  ]);
  return results.reduce((n, r) => n + r.meta.changes, 0);
}
