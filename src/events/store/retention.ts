// Retention in the application object's database: events, index rows and journeys past it go, in
// bounded steps.
import { purgeJourneys } from './journeys';

/** Deletes events, index rows and journeys created before `before`, at most `limit` of each; returns how many. */
export function purgeEvents(storage: DurableObjectStorage, before: string, limit: number): number {
  return storage.transactionSync(() => {
    const { sql } = storage;
    const events = sql.exec(
      `DELETE FROM events WHERE event_id IN (
         SELECT event_id FROM events WHERE created_at < ?1 ORDER BY created_at LIMIT ?2) RETURNING 1`,
      before,
      limit,
    );
    const deliveries = sql.exec(
      `DELETE FROM deliveries WHERE delivery_id IN (
         SELECT delivery_id FROM deliveries WHERE created_at < ?1 ORDER BY created_at LIMIT ?2) RETURNING 1`,
      before,
      limit,
    );
    const journeys = purgeJourneys(sql, Date.parse(before), limit);
    return events.toArray().length + deliveries.toArray().length + journeys;
  });
}

/** When the oldest event or journey was stored (ms), or null when there is none. */
export function oldestEvent(sql: SqlStorage): number | null {
  const [row] = sql
    .exec<{ at: string | null; journey: number | null }>(
      `SELECT (SELECT MIN(created_at) FROM events) AS at,
         (SELECT created FROM journeys ORDER BY sequence LIMIT 1) AS journey`,
    )
    .toArray();
  const times = [row?.at == null ? null : Date.parse(row.at), row?.journey ?? null].filter((t) => t !== null);
  return times.length === 0 ? null : Math.min(...times);
}

/** What the application's object holds (counted before an erasure): its events and its value sets' values. */
export function countHeld(sql: SqlStorage): { events: number; values: number } {
  const [row] = sql
    .exec<{ events: number; values: number }>(
      `SELECT (SELECT COUNT(*) FROM events) + (SELECT COUNT(*) FROM dedupe) AS events, (SELECT COUNT(*) FROM webhook_values) AS "values"`,
    )
    .toArray();
  return { events: row?.events ?? 0, values: row?.values ?? 0 };
}
