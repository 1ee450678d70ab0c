// Events stored with their deliveries (the fan-out): one batch, which D1 runs as a transaction, so
// an event is never stored without the deliveries it makes. Delivery and webhook ids travel as
// decimal text (CAST in SQL), never doubles.
import type { Db } from '../platform/d1';
import { OWNED } from '../webhooks/store/rows';

/** An event to store, with what its deliveries need. */
export interface EventToStore {
  eventId: string;
  appId: string;
  /** 'id:' + the publisher's id, or 'msg:' + the queue message's id; null: always a new event. */
  sourceKey: string | null;
  type: string;
  /** The exact body every attempt sends. */
  payload: string;
  /** When it is stored (ISO 8601 UTC): the payload's timestamp. */
  createdAt: string;
}

/** What storing an event did: its id (an earlier one's when published before), and the deliveries made now. */
export interface StoredEvent {
  eventId: string;
  /** Deliveries this call made (none when the event was published before). */
  deliveryIds: string[];
}

/**
 * Stores events, each with one pending delivery per enabled webhook of its application whose
 * `event_types` is null or names its type, as they stand now; all in one batch. An event whose
 * source key its application published before is not stored again and makes no delivery.
 * Safe to retry: a repeat of a committed batch (same event ids) finds its own event and
 * deliveries. (A queue message redelivered after its batch committed makes new event ids: it
 * finds the event by its source key and queues nothing; the Cron Trigger queues what is left.)
 */
export async function storeEvents(db: Db, events: EventToStore[]): Promise<StoredEvent[]> {
  const statements = events.flatMap((e) => [
    db
      .prepare(
        `INSERT OR IGNORE INTO events (event_id, app_id, source_key, type, payload, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
      )
      .bind(e.eventId, e.appId, e.sourceKey, e.type, e.payload, e.createdAt),
    db
      .prepare(
        `INSERT OR IGNORE INTO deliveries (event_id, webhook_id, app_id, next_attempt_at, created_at)
         SELECT ?1, webhook_id, app_id, ?4, ?4
         FROM webhooks
         WHERE app_id = ?2 AND is_enabled = 1
           AND (event_types IS NULL OR EXISTS (SELECT 1 FROM json_each(webhooks.event_types) WHERE value = ?3))
           AND EXISTS (SELECT 1 FROM events WHERE event_id = ?1)
         ORDER BY webhook_id`,
      )
      .bind(e.eventId, e.appId, e.type, e.createdAt),
    db
      .prepare(
        `SELECT COALESCE(
           (SELECT event_id FROM events WHERE event_id = ?1),
           (SELECT event_id FROM events WHERE app_id = ?2 AND source_key = ?3)) AS event_id,
           (SELECT json_group_array(CAST(delivery_id AS TEXT)) FROM deliveries WHERE event_id = ?1) AS deliveries`,
      )
      .bind(e.eventId, e.appId, e.sourceKey),
  ]);
  const results = await db.batch<{ event_id: string | null; deliveries: string }>(statements);
  return events.map((_event, i) => {
    const row = results[i * 3 + 2]?.results[0];
    if (row?.event_id == null) throw new Error('publish: the event was neither stored nor found');
    return { eventId: row.event_id, deliveryIds: JSON.parse(row.deliveries) as string[] };
  });
}

/** What a test event found: no such webhook, a disabled one, or the delivery it made. */
export type TestEventOutcome =
  | { outcome: 'missing' }
  | { outcome: 'disabled' }
  | { outcome: 'queued'; deliveryId: string };

/**
 * Stores a test event for one webhook of the application, with its one delivery (its
 * `event_types` do not apply), if the webhook exists and is enabled. One batch; safe to retry.
 */
export async function storeTestEvent(db: Db, webhookId: string, event: EventToStore): Promise<TestEventOutcome> {
  const enabled = `SELECT 1 FROM webhooks WHERE ${OWNED} AND is_enabled = 1`;
  const [, , facts] = await db.batch<{ enabled: number | null; delivery_id: string | null }>([
    db
      .prepare(
        `INSERT OR IGNORE INTO events (event_id, app_id, source_key, type, payload, created_at)
         SELECT ?3, ?2, NULL, ?4, ?5, ?6 WHERE EXISTS (${enabled})`,
      )
      .bind(webhookId, event.appId, event.eventId, event.type, event.payload, event.createdAt),
    db
      .prepare(
        `INSERT OR IGNORE INTO deliveries (event_id, webhook_id, app_id, next_attempt_at, created_at)
         SELECT ?3, webhook_id, app_id, ?4, ?4 FROM webhooks
         WHERE ${OWNED} AND is_enabled = 1
           AND EXISTS (SELECT 1 FROM events WHERE event_id = ?3)`,
      )
      .bind(webhookId, event.appId, event.eventId, event.createdAt),
    db
      .prepare(
        `SELECT (SELECT is_enabled FROM webhooks WHERE ${OWNED}) AS enabled,
           (SELECT CAST(delivery_id AS TEXT) FROM deliveries WHERE event_id = ?3) AS delivery_id`,
      )
      .bind(webhookId, event.appId, event.eventId),
  ]);
  const row = facts?.results[0];
  if (row?.delivery_id != null) return { outcome: 'queued', deliveryId: row.delivery_id };
  return row?.enabled == null ? { outcome: 'missing' } : { outcome: 'disabled' };
}
