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

/**
 * An event's journey: the event (its type, data and time, read from the body its deliveries
 * send, `data` with its exact text) and each of its deliveries.
 */
export function eventJourneyJson(eventId: string, deliveries: { webhookId: string; delivery: DeliveryRow }[]): string {
  const first = deliveries[0]?.delivery as DeliveryRow;
  const payload = first.payload ?? '';
  // The body is {"type":…,"timestamp":"…","data":…}: a type and a time hold no `,"data":`.
  const at = payload.indexOf(',"data":');
  const data = at === -1 ? 'null' : payload.slice(at + 8, -1);
  const each = deliveries.map(
    ({ webhookId, delivery: d }) =>
      `{"webhook_id":${webhookId},"delivery_id":${d.delivery_id},"status":${JSON.stringify(d.status)},"attempts":${d.attempts},"last_status":${d.last_status ?? 'null'},"last_error":${text(d.last_error)}}`,
  );
  return `{"event_id":${JSON.stringify(eventId)},"type":${JSON.stringify(first.type)},"data":${data},"created_at":${JSON.stringify(first.created_at)},"deliveries":[${each.join(',')}]}`;
}
