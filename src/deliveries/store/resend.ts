// Resending a delivery: a new event that carries the original's body and message id (what
// receivers see as `webhook-id`), with one new delivery to the same webhook. One round trip.
import type { Db } from '../../platform/d1';

/** What a resend found: no such delivery (or its webhook is gone), a disabled webhook, or the new delivery. */
export type ResendOutcome =
  | { outcome: 'missing' }
  | { outcome: 'disabled' }
  | { outcome: 'queued'; deliveryId: string; webhookId: string };

// ?1 the delivery resent, ?2 the application: that delivery, its event, and its (enabled) webhook.
const ORIGINAL = `FROM deliveries AS d
  JOIN events AS e ON e.event_id = d.event_id
  JOIN webhooks AS w ON w.webhook_id = d.webhook_id AND w.app_id = d.app_id
  WHERE d.delivery_id = CAST(?1 AS INTEGER) AND d.app_id = ?2`;

/**
 * Stores event `eventId` (new, made for this request and kept across its retries) as a copy of
 * the delivery's event: the same type and body bytes, `message_id` the original's message id, no
 * source key; and one pending delivery of it to the same webhook, due `now`, if the application
 * has that delivery and its webhook is enabled. Whatever state the old delivery is in, it is left
 * as it is. Safe to retry: a retried batch finds the event and delivery it made.
 */
export async function resendDelivery(
  db: Db,
  deliveryId: string,
  appId: string,
  eventId: string,
  now: string,
): Promise<ResendOutcome> {
  const [, , facts] = await db.batch<{ enabled: number | null; delivery_id: string | null; webhook_id: string | null }>(
    [
      db
        .prepare(
          `INSERT OR IGNORE INTO events (event_id, app_id, source_key, type, payload, created_at, message_id)
           SELECT ?3, e.app_id, NULL, e.type, e.payload, ?4, COALESCE(e.message_id, e.event_id)
           ${ORIGINAL} AND w.is_enabled = 1`,
        )
        .bind(deliveryId, appId, eventId, now),
      db
        .prepare(
          `INSERT OR IGNORE INTO deliveries (event_id, webhook_id, app_id, next_attempt_at, created_at)
           SELECT ?3, d.webhook_id, d.app_id, ?4, ?4
           ${ORIGINAL} AND w.is_enabled = 1 AND EXISTS (SELECT 1 FROM events WHERE event_id = ?3)`,
        )
        .bind(deliveryId, appId, eventId, now),
      db
        .prepare(
          `SELECT (SELECT w.is_enabled ${ORIGINAL}) AS enabled,
             (SELECT CAST(delivery_id AS TEXT) FROM deliveries WHERE event_id = ?3) AS delivery_id,
             (SELECT CAST(webhook_id AS TEXT) FROM deliveries WHERE event_id = ?3) AS webhook_id`,
        )
        .bind(deliveryId, appId, eventId),
    ],
  );
  const row = facts?.results[0];
  if (row?.delivery_id != null && row.webhook_id != null) {
    return { outcome: 'queued', deliveryId: row.delivery_id, webhookId: row.webhook_id };
  }
  return row?.enabled == null ? { outcome: 'missing' } : { outcome: 'disabled' };
}
