// Idempotent publishing in the application object's database: each event published with a source
// key (the publisher's `id`, or the queue message's) is kept, by that key, for EVENT_DEDUPE_HOURS;
// publishing the key again within them answers that event, past them makes a new one. One row per
// event (and its index by age; an event without a source key is kept by its own id), deleted
// once the window has passed: beyond it the object
// keeps nothing per event. Events stored before this table (the events table) are still found,
// within the window, until the retention removes them.

/** The key of an event published without a source key: its own id, so handing it over twice stores it once. */
export const EVENT_KEY = 'evt:';

/**
 * The event published within the window (at or after `since`) with this key, or one stored
 * before this table with this key or event id, or null.
 */
export function publishedEvent(
  sql: SqlStorage,
  key: string,
  eventId: string,
  since: string,
  legacyEvents = true,
): string | null {
  const [row] = sql
    .exec<{ event_id: string }>(
      legacyEvents
        ? `SELECT event_id FROM dedupe WHERE source_key = ?1 AND created_at >= ?3
           UNION ALL SELECT event_id FROM events WHERE (source_key = ?1 OR event_id = ?2) AND created_at >= ?3 LIMIT 1`
        : 'SELECT event_id FROM dedupe WHERE source_key = ?1 AND created_at >= ?3',
      key,
      eventId,
      since,
    )
    .toArray();
  return row?.event_id ?? null;
}

/** Whether the events table (of the releases before) holds any event: once empty, it stays so. */
export const hasLegacyEvents = (sql: SqlStorage) =>
  sql.exec<{ n: number }>('SELECT EXISTS (SELECT 1 FROM events) AS n').one().n === 1;

/** Keeps the event by its source key (an expired one of the same key is replaced). */
export function rememberEvent(sql: SqlStorage, sourceKey: string, eventId: string, createdAt: string): void {
  sql.exec(
    `INSERT INTO dedupe (source_key, event_id, created_at) VALUES (?1, ?2, ?3)
     ON CONFLICT (source_key) DO UPDATE SET event_id = excluded.event_id, created_at = excluded.created_at`,
    sourceKey,
    eventId,
    createdAt,
  );
}

/** Deletes at most `limit` keys kept since before `before`; returns how many. */
export function forgetEvents(storage: DurableObjectStorage, before: string, limit: number): number {
  return storage.transactionSync(
    () =>
      storage.sql
        .exec(
          `DELETE FROM dedupe WHERE source_key IN (
           SELECT source_key FROM dedupe WHERE created_at < ?1 ORDER BY created_at LIMIT ?2) RETURNING 1`,
          before,
          limit,
        )
        .toArray().length,
  );
}

/** When the oldest kept key was published (ms), or null when none is kept. */
export function oldestKept(sql: SqlStorage): number | null {
  const [row] = sql.exec<{ at: string | null }>('SELECT MIN(created_at) AS at FROM dedupe').toArray();
  return row?.at == null ? null : Date.parse(row.at);
}
