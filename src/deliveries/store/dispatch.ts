// What the deliveries queue's consumer reads and writes: the batch's deliveries with their events and
// webhooks (one statement), then every attempt and state change of the batch (one batch).
import type { Db } from '../../platform/d1';
import { type DisableCandidate, type HealthChange, healthStatements } from '../../webhooks/store/health';

/** A delivery as the consumer needs it: its state, its event's body, its webhook (null fields when gone). */
export interface DeliveryToAttempt {
  delivery_id: string;
  status: string;
  attempts: number;
  schedule_start: number;
  queue_gen: number;
  next_attempt_at: string | null;
  webhook_id: string;
  app_id: string;
  /** What receivers see as `webhook-id`: the event's message id (a resend's original), else its event_id. */
  event_id: string;
  payload: string;
  url: string | null;
  is_enabled: number | null;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: string | null;
  /** The webhook's own limit of attempts a second (null: the service's). */
  rate_limit: number | null;
}

/** The deliveries of a batch of queue messages, with their events and webhooks, in one statement. */
export async function loadDeliveries(db: Db, deliveryIds: string[]): Promise<DeliveryToAttempt[]> {
  const { results } = await db
    .prepare(
      `SELECT CAST(d.delivery_id AS TEXT) AS delivery_id, d.status, d.attempts, d.schedule_start, d.queue_gen,
         d.next_attempt_at, CAST(d.webhook_id AS TEXT) AS webhook_id, d.app_id,
         COALESCE(e.message_id, e.event_id) AS event_id, e.payload,
         w.url, w.is_enabled, w.secret, w.previous_secret, w.previous_secret_until, w.rate_limit
       FROM deliveries AS d
       JOIN events AS e ON e.event_id = d.event_id
       LEFT JOIN webhooks AS w ON w.webhook_id = d.webhook_id AND w.app_id = d.app_id
       WHERE d.delivery_id IN (SELECT CAST(value AS INTEGER) FROM json_each(?1))`,
    )
    .bind(JSON.stringify(deliveryIds))
    .all<DeliveryToAttempt>();
  return results;
}

/** One attempt as recorded. */
export interface AttemptRecord {
  delivery_id: string;
  attempt: number;
  attempted_at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  body: string | null;
}

/**
 * A delivery's new state. Applied only while it is still pending with `expected` attempts, so a
 * duplicate queue message never records twice.
 */
export interface DeliveryChange {
  delivery_id: string;
  expected: number;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: string | null;
  /** The attempt made now (its time, status, error); null when none was made. */
  attempt: { at: string; status: number | null; error: string | null } | null;
}

/**
 * Records a consumer batch in one batch: every attempt, every delivery's new state, the webhooks'
 * health, and the webhooks the service disables, each with its audit record (actor 'system',
 * with the reason).
 */
export async function recordBatch(
  db: Db,
  attempts: AttemptRecord[],
  changes: DeliveryChange[],
  health: HealthChange[],
  disable: DisableCandidate[],
): Promise<void> {
  const statements: D1PreparedStatement[] = [];
  if (attempts.length > 0) {
    statements.push(
      db
        .prepare(
          `INSERT OR IGNORE INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
           SELECT CAST(json_extract(value, '$.delivery_id') AS INTEGER), json_extract(value, '$.attempt'),
             json_extract(value, '$.attempted_at'), json_extract(value, '$.status'), json_extract(value, '$.error'),
             json_extract(value, '$.duration_ms'), json_extract(value, '$.body')
           FROM json_each(?1)
           WHERE EXISTS (SELECT 1 FROM deliveries WHERE delivery_id = CAST(json_extract(value, '$.delivery_id') AS INTEGER))`,
        )
        .bind(JSON.stringify(attempts)),
    );
  }
  if (changes.length > 0) {
    statements.push(
      db
        .prepare(
          `UPDATE deliveries
           SET status = c.new_status, attempts = c.new_attempts, next_attempt_at = c.next_at,
             last_attempt_at = COALESCE(c.at, last_attempt_at),
             last_status = CASE WHEN c.at IS NULL THEN last_status ELSE c.http_status END,
             last_error = CASE WHEN c.at IS NULL THEN last_error ELSE c.error_kind END
           FROM (SELECT CAST(json_extract(value, '$.delivery_id') AS INTEGER) AS id,
                   json_extract(value, '$.expected') AS expected, json_extract(value, '$.status') AS new_status,
                   json_extract(value, '$.attempts') AS new_attempts, json_extract(value, '$.next_attempt_at') AS next_at,
                   json_extract(value, '$.attempt.at') AS at, json_extract(value, '$.attempt.status') AS http_status,
                   json_extract(value, '$.attempt.error') AS error_kind
                 FROM json_each(?1)) AS c
           WHERE deliveries.delivery_id = c.id AND deliveries.status = 'pending' AND deliveries.attempts = c.expected`,
        )
        .bind(JSON.stringify(changes)),
    );
  }
  statements.push(...healthStatements(db, health, disable));
  if (statements.length > 0) await db.batch(statements);
}
