// An event's journey in the application object's database: for each event stored with deliveries,
// one row by its sequence number (which its id carries, store/delivery-ids.ts) naming the endpoint
// numbers it was handed to, so its deliveries are found from its id alone (their ids are made of
// the two). About 20 bytes an event; deleted with the retention, like the deliveries it names.
import { carriedId, sequenceOf } from './delivery-ids';

/** Notes that event `sequence`, stored at `created` (ms), was handed to these endpoint numbers. */
export function noteJourney(sql: SqlStorage, sequence: bigint, created: number, endpoints: number[]): void {
  sql.exec(
    'INSERT INTO journeys (sequence, created, endpoints) VALUES (?1, ?2, ?3)',
    sequence.toString(),
    created,
    endpoints.join(','),
  );
}

/**
 * The deliveries of the event with this id (its webhook and delivery id each), or null when its
 * id carries no sequence number or none is noted for it. Whether each is still kept, and is this
 * event's (any id of the form carries a number), the endpoints' objects say.
 */
export function journeyOf(sql: SqlStorage, eventId: string): { webhookId: string; deliveryId: string }[] | null {
  const sequence = sequenceOf(eventId);
  if (sequence === null) return null;
  const [row] = sql
    .exec<{ endpoints: string }>(
      'SELECT endpoints FROM journeys WHERE sequence = CAST(?1 AS INTEGER)',
      sequence.toString(),
    )
    .toArray();
  if (row === undefined) return null;
  const numbers = row.endpoints.split(',').map(Number);
  const webhooks = new Map(
    sql
      .exec<{ webhook_id: string; n: number }>(
        `SELECT webhook_id, n FROM endpoints WHERE n IN (SELECT value FROM json_each(?1))`,
        JSON.stringify(numbers),
      )
      .toArray()
      .map((r) => [r.n, r.webhook_id]),
  );
  return numbers.flatMap((n) => {
    const webhookId = webhooks.get(n);
    return webhookId === undefined ? [] : [{ webhookId, deliveryId: carriedId(sequence, n) }];
  });
}

/**
 * Deletes at most `limit` journeys of events stored before `before` (ms), oldest first; returns
 * how many. The sequence grows with time, so the oldest rows are the first by key: no index by age.
 */
export function purgeJourneys(sql: SqlStorage, before: number, limit: number): number {
  return sql
    .exec(
      `DELETE FROM journeys WHERE sequence IN (
         SELECT sequence FROM journeys ORDER BY sequence LIMIT ?2) AND created < ?1 RETURNING 1`,
      before,
      limit,
    )
    .toArray().length;
}
