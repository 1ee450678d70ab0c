// How the API writes deliveries: the one place that turns their rows into JSON. Ids are spliced
// in as JSON integers with their exact digits. A delivery's `event_id` is what its receiver saw as
// `webhook-id`: its message id (a resend's is its original's event id).
import type { AttemptRow, DeliveryRow } from './store/log';

const text = (value: string | null) => (value === null ? 'null' : JSON.stringify(value));

/**
 * A delivery object; with `attempts`, its `payload` (the body its requests carry, exactly; a row
 * read without it has none) and `attempt_log` too.
 */
export function deliveryJson(row: DeliveryRow, attempts?: AttemptRow[]): string {
  const fields = `{"delivery_id":${row.delivery_id},"event_id":${JSON.stringify(row.message_id)},"type":${JSON.stringify(row.type)},"status":${JSON.stringify(row.status)},"attempts":${row.attempts},"next_attempt_at":${text(row.next_attempt_at)},"last_attempt_at":${text(row.last_attempt_at)},"last_status":${row.last_status ?? 'null'},"last_error":${text(row.last_error)},"created_at":${JSON.stringify(row.created_at)}`;
  if (attempts === undefined) return `${fields}}`;
  const log = attempts.map(
    (a) =>
      `{"attempt":${a.attempt},"attempted_at":${JSON.stringify(a.attempted_at)},"status":${a.status ?? 'null'},"error":${text(a.error)},"duration_ms":${a.duration_ms},"body":${text(a.body)}}`,
  );
  const payload = row.payload === undefined ? '' : `,"payload":${JSON.stringify(row.payload)}`;
  return `${fields}${payload},"attempt_log":[${log.join(',')}]}`;
}

/** A page of the delivery log. */
export const deliveryPageJson = (rows: DeliveryRow[], nextCursor: string | null) =>
  `{"deliveries":[${rows.map((r) => deliveryJson(r)).join(',')}],"next_cursor":${text(nextCursor)}}`;
