// The delivery log: a webhook's deliveries in keyset pages, and one delivery with its attempts.
// One round trip each; the application's ownership of the webhook is part of every statement.
import { DELIVERY_CURSOR, type Page, pageOf } from '../../core/pages';
import type { Db } from '../../platform/d1';
import { OWNED } from '../../webhooks/store/rows';
import type { AttemptRecord } from './dispatch';

/** A delivery as the log shows it. */
export interface DeliveryRow {
  delivery_id: string;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
}

/** One recorded attempt, as the log shows it. */
export type AttemptRow = Omit<AttemptRecord, 'delivery_id'>;

// event_id: what receivers saw as `webhook-id` (a resend shows its original's).
const DELIVERY_COLUMNS = `CAST(d.delivery_id AS TEXT) AS delivery_id, COALESCE(e.message_id, e.event_id) AS event_id, e.type, d.status, d.attempts,
  d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error, d.created_at`;
const OWNED_WEBHOOK = `SELECT 1 FROM webhooks WHERE ${OWNED}`;

export interface DeliveryPageQuery {
  /** Only deliveries older than this one (the cursor's); undefined for the first page. */
  before?: string;
  status?: string;
  /** Only deliveries of events of this type. */
  type?: string;
  limit: number;
}

/**
 * A keyset page of one webhook's deliveries, newest (largest id) first, with the cursor of the
 * next page; null when the application has no such webhook. One round trip.
 */
export async function listDeliveries(
  db: Db,
  webhookId: string,
  appId: string,
  { before, status, type, limit }: DeliveryPageQuery,
): Promise<Page<DeliveryRow> | null> {
  const [owned, page] = await db.batch<Record<string, unknown>>([
    db.prepare(`SELECT EXISTS (${OWNED_WEBHOOK}) AS found`).bind(webhookId, appId),
    db
      .prepare(
        `SELECT ${DELIVERY_COLUMNS}
         FROM deliveries AS d JOIN events AS e ON e.event_id = d.event_id
         WHERE d.webhook_id = CAST(?1 AS INTEGER) AND d.app_id = ?2
           AND (?3 IS NULL OR d.delivery_id < CAST(?3 AS INTEGER)) AND (?4 IS NULL OR d.status = ?4)
           AND (?6 IS NULL OR e.type = ?6)
           AND EXISTS (${OWNED_WEBHOOK})
         ORDER BY d.delivery_id DESC
         LIMIT ?5`,
      )
      .bind(webhookId, appId, before ?? null, status ?? null, limit + 1, type ?? null),
  ]);
  if (owned?.results[0]?.found !== 1) return null;
  const rows = (page?.results ?? []) as unknown as DeliveryRow[];
  return pageOf(rows, limit, (row) => row.delivery_id, DELIVERY_CURSOR);
}

/** One delivery of the application with every attempt, oldest first; null when it has none such. One round trip. */
export async function getDelivery(
  db: Db,
  deliveryId: string,
  appId: string,
): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] } | null> {
  const owned = 'd.delivery_id = CAST(?1 AS INTEGER) AND d.app_id = ?2';
  const [delivery, attempts] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `SELECT ${DELIVERY_COLUMNS} FROM deliveries AS d JOIN events AS e ON e.event_id = d.event_id WHERE ${owned}`,
      )
      .bind(deliveryId, appId),
    db
      .prepare(
        `SELECT a.attempt, a.attempted_at, a.status, a.error, a.duration_ms, a.body
         FROM delivery_attempts AS a JOIN deliveries AS d ON d.delivery_id = a.delivery_id
         WHERE ${owned}
         ORDER BY a.attempt`,
      )
      .bind(deliveryId, appId),
  ]);
  const row = delivery?.results[0] as unknown as DeliveryRow | undefined;
  if (row === undefined) return null;
  return { delivery: row, attempts: (attempts?.results ?? []) as unknown as AttemptRow[] };
}
