// The delivery log and counters, read from the endpoint object's database: pages of deliveries,
// one delivery with its attempts, what a resend copies, the hourly counters.
import { DELIVERY_CURSOR, type Page, pageOf } from '../../core/pages';
import { newestFirst } from '../../events/store/delivery-ids';
import type { AttemptRecord } from './sending';

/** A delivery as the log shows it. */
export interface DeliveryRow {
  delivery_id: string;
  /** What receivers saw as `webhook-id`, which the log shows as `event_id` (a resend's: its original's). */
  message_id: string;
  type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  /** The exact body every attempt sends: read for one delivery only. */
  payload?: string;
  /** The event it delivers (a resend's own, where `message_id` is its original's): read for one delivery only. */
  event_id?: string;
}

/** One recorded attempt, as the log shows it. */
export type AttemptRow = Omit<AttemptRecord, 'delivery_id'>;

const DELIVERY_COLUMNS = `CAST(delivery_id AS TEXT) AS delivery_id, message_id, type, status, attempts,
  next_attempt_at, last_attempt_at, last_status, last_error, created_at`;

export interface DeliveryPageQuery {
  /** Only deliveries older than this one (the cursor's); undefined for the first page. */
  before?: string;
  status?: string;
  /** Only deliveries of events of this type. */
  type?: string;
  limit: number;
}

/** A keyset page of the deliveries, newest first (by era, then id: see newestFirst), with the cursor of the next page. */
export function listDeliveries(sql: SqlStorage, { before, status, type, limit }: DeliveryPageQuery): Page<DeliveryRow> {
  const rows = newestFirst(before, limit + 1, (from, to, wanted) =>
    sql
      .exec<DeliveryRow & Record<string, SqlStorageValue>>(
        `SELECT ${DELIVERY_COLUMNS} FROM deliveries
         WHERE delivery_id >= CAST(?1 AS INTEGER) AND delivery_id < CAST(?2 AS INTEGER)
           AND (?3 IS NULL OR status = ?3) AND (?4 IS NULL OR type = ?4)
         ORDER BY delivery_id DESC
         LIMIT ?5`,
        from,
        to,
        status ?? null,
        type ?? null,
        wanted,
      )
      .toArray(),
  );
  return pageOf(rows, limit, (row) => row.delivery_id, DELIVERY_CURSOR);
}

/** One delivery of the application with its body and every attempt, oldest first; null when there is none such. */
export function getDelivery(
  sql: SqlStorage,
  deliveryId: string,
  appId: string,
): { delivery: DeliveryRow; attempts: AttemptRow[] } | null {
  const [delivery] = sql
    .exec<DeliveryRow & Record<string, SqlStorageValue>>(
      `SELECT ${DELIVERY_COLUMNS}, payload, event_id FROM deliveries
       WHERE delivery_id = CAST(?1 AS INTEGER) AND app_id = ?2`,
      deliveryId,
      appId,
    )
    .toArray();
  if (delivery === undefined) return null;
  const attempts = sql
    .exec<AttemptRow & Record<string, SqlStorageValue>>(
      `SELECT attempt, attempted_at, status, error, duration_ms, body FROM delivery_attempts
       WHERE delivery_id = CAST(?1 AS INTEGER) ORDER BY attempt`,
      deliveryId,
    )
    .toArray();
  return { delivery, attempts };
}

/** What a resend copies of a delivery: its event's type, body and message id; null when the application has none such. */
export function eventOf(
  sql: SqlStorage,
  deliveryId: string,
  appId: string,
): { type: string; payload: string; message_id: string } | null {
  const [row] = sql
    .exec<{ type: string; payload: string; message_id: string }>(
      `SELECT type, payload, message_id FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER) AND app_id = ?2`,
      deliveryId,
      appId,
    )
    .toArray();
  return row ?? null;
}

/** One hour's counters: deliveries created in it by their status now, attempts made in it and how many of them failed. */
export interface HourCounts {
  hour: string;
  pending: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  attempts: number;
  failed_attempts: number;
}

/**
 * The counters of every hour from `since` (the start of an hour, `2026-11-24T14:00:00Z`) on: those
 * kept, with the pending deliveries counted now (read through the index of pending ones only).
 */
export function readHourCounts(sql: SqlStorage, since: string): HourCounts[] {
  return sql
    .exec<HourCounts & Record<string, SqlStorageValue>>(
      `SELECT hour, SUM(pending) AS pending, SUM(succeeded) AS succeeded, SUM(failed) AS failed,
         SUM(cancelled) AS cancelled, SUM(attempts) AS attempts, SUM(failed_attempts) AS failed_attempts
       FROM (
         SELECT hour, pending, succeeded, failed, cancelled, attempts, failed_attempts FROM delivery_stats WHERE hour >= ?1
         UNION ALL
         SELECT substr(created_at, 1, 13) || ':00:00Z' AS hour, 1, 0, 0, 0, 0, 0
         FROM deliveries INDEXED BY deliveries_due WHERE status = 'pending')
       WHERE hour >= ?1 GROUP BY hour ORDER BY hour`,
      since,
    )
    .toArray();
}
