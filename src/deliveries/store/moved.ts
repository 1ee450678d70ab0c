// The move's landing in the endpoint object's database: deliveries moved from D1 with their state.
import { type AttemptRecord, insertAttempts, type NewDelivery } from './sending';

/** A delivery in full, as a release before kept it in D1, moved here with its state. */
export interface MovedDelivery extends NewDelivery {
  status: string;
  attempts: number;
  schedule_start: number;
  recovery_id: string | null;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
}

/**
 * Stores deliveries moved from D1 with their state and attempts, each exactly as it was; one
 * already here (a move repeated after a crash) keeps what it has become since.
 */
export function insertMoved(sql: SqlStorage, deliveries: MovedDelivery[], attempts: AttemptRecord[]): void {
  for (const d of deliveries) {
    sql.exec(
      `INSERT OR IGNORE INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, attempts,
         schedule_start, recovery_id, next_attempt_at, last_attempt_at, last_status, last_error, created_at)
       VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)`,
      d.delivery_id,
      d.event_id,
      d.message_id,
      d.app_id,
      d.type,
      d.payload,
      d.status,
      d.attempts,
      d.schedule_start,
      d.recovery_id,
      d.next_attempt_at,
      d.last_attempt_at,
      d.last_status,
      d.last_error,
      d.created_at,
    );
  }
  insertAttempts(sql, attempts);
}
