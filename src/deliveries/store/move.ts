// What the move to the Durable Objects reads and writes in D1: the tables of the release before
// (events, deliveries, delivery_attempts, delivery_stats), emptied in claimed steps.
import type { Db } from '../../platform/d1';
import type { MovedDelivery } from './moved';
import type { AttemptRecord } from './sending';

/**
 * Claims deliveries not claimed yet (at most `limit`): stamped `now`, their queue generation
 * raised (any message queued for them is stale) and their next attempt time kept in move_due_at
 * (so the release before never queues them again). Returns how many.
 */
export async function claimDeliveries(db: Db, now: string, limit: number): Promise<number> {
  const { meta } = await db
    .prepare(
      `UPDATE deliveries SET move_claimed_at = ?1, move_due_at = next_attempt_at, next_attempt_at = NULL,
         queue_gen = queue_gen + 1
       WHERE delivery_id IN (SELECT delivery_id FROM deliveries WHERE move_claimed_at IS NULL LIMIT ?2)`,
    )
    .bind(now, limit)
    .run();
  return meta.changes;
}

/** A claimed delivery as it moves: its row, its webhook, its event's source key. */
export interface ClaimedDelivery extends MovedDelivery {
  webhook_id: string;
  source_key: string | null;
}

/**
 * Deliveries claimed no later than `claimedBy` (at most `limit`), each with its event and its
 * attempts. A pending one is due when the release before last said (`now` if it never did).
 */
export async function claimedDeliveries(
  db: Db,
  claimedBy: string,
  now: string,
  limit: number,
): Promise<{ deliveries: ClaimedDelivery[]; attempts: AttemptRecord[] }> {
  const claimed = `SELECT delivery_id FROM deliveries WHERE move_claimed_at <= ?1 ORDER BY delivery_id LIMIT ?2`;
  const [deliveries, attempts] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `SELECT CAST(d.delivery_id AS TEXT) AS delivery_id, CAST(d.webhook_id AS TEXT) AS webhook_id, d.app_id,
           d.event_id, COALESCE(e.message_id, e.event_id) AS message_id, e.type, e.payload, e.source_key,
           d.status, d.attempts, d.schedule_start, d.recovery_id,
           CASE WHEN d.status = 'pending' THEN COALESCE(d.next_attempt_at, d.move_due_at, ?3) END AS next_attempt_at,
           d.last_attempt_at, d.last_status, d.last_error, d.created_at
         FROM deliveries AS d JOIN events AS e ON e.event_id = d.event_id
         WHERE d.delivery_id IN (${claimed})`,
      )
      .bind(claimedBy, limit, now),
    db
      .prepare(
        `SELECT CAST(delivery_id AS TEXT) AS delivery_id, attempt, attempted_at, status, error, duration_ms, body
         FROM delivery_attempts WHERE delivery_id IN (${claimed}) ORDER BY delivery_id, attempt`,
      )
      .bind(claimedBy, limit),
  ]);
  return {
    deliveries: (deliveries?.results ?? []) as unknown as ClaimedDelivery[],
    attempts: (attempts?.results ?? []) as unknown as AttemptRecord[],
  };
}

/** Deletes moved deliveries with their attempts. */
export async function deleteMoved(db: Db, deliveryIds: string[]): Promise<void> {
  const ids = 'SELECT CAST(value AS INTEGER) FROM json_each(?1)';
  await db.batch([
    db.prepare(`DELETE FROM delivery_attempts WHERE delivery_id IN (${ids})`).bind(JSON.stringify(deliveryIds)),
    db.prepare(`DELETE FROM deliveries WHERE delivery_id IN (${ids})`).bind(JSON.stringify(deliveryIds)),
  ]);
}

/** An event of the release before, as its application's object keeps it. */
export interface EventToMove {
  event_id: string;
  app_id: string;
  source_key: string | null;
  created_at: string;
}

/** Events at most `limit`, oldest first; `orphansOnly`: only those no delivery in D1 refers to any more. */
export async function eventsToMove(db: Db, limit: number, orphansOnly: boolean): Promise<EventToMove[]> {
  const { results } = await db
    .prepare(
      `SELECT event_id, app_id, source_key, created_at FROM events
       WHERE ?2 = 0 OR NOT EXISTS (SELECT 1 FROM deliveries WHERE deliveries.event_id = events.event_id)
       ORDER BY created_at, event_id LIMIT ?1`,
    )
    .bind(limit, orphansOnly ? 1 : 0)
    .all<EventToMove>();
  return results;
}

/** Deletes moved events that no delivery in D1 refers to, and the counters once no delivery is left. */
export async function deleteMovedEvents(db: Db, eventIds: string[]): Promise<void> {
  await db.batch([
    db
      .prepare(
        `DELETE FROM events WHERE event_id IN (SELECT value FROM json_each(?1))
           AND NOT EXISTS (SELECT 1 FROM deliveries WHERE deliveries.event_id = events.event_id)`,
      )
      .bind(JSON.stringify(eventIds)),
    db.prepare('DELETE FROM delivery_stats WHERE NOT EXISTS (SELECT 1 FROM deliveries)'),
  ]);
}
