// The archive in the endpoint object's database (docs/storage.md, "The archive"): deliveries that
// ended read whole for R2, the slim rows that stay once they are there, the rows the log and
// recovery find among them, a recovered one brought back whole, and the archive's retention.
// Delivery ids are int64 and travel as decimal text (CAST in SQL).
import { newestFirst } from '../../events/store/delivery-ids';
import type { AttemptRow } from './log';

/** A delivery as the archive holds it: every column of its row, and every attempt with its body. */
export interface ArchivedDelivery {
  delivery_id: string;
  event_id: string;
  message_id: string;
  app_id: string;
  type: string;
  payload: string;
  status: string;
  attempts: number;
  schedule_start: number;
  recovery_id: string | null;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  attempt_log: AttemptRow[];
}

/** A status in the slim row's code (its low two bits). */
export const STATUS_CODES: Record<string, number> = { succeeded: 1, failed: 2, cancelled: 3 };

const ROW_COLUMNS = `CAST(delivery_id AS TEXT) AS delivery_id, event_id, message_id, app_id, type, payload, status,
  attempts, schedule_start, recovery_id, next_attempt_at, last_attempt_at, last_status, last_error, created_at`;

/**
 * Deliveries that ended and whose last change (their last attempt, else their creation) is before
 * `before`, oldest first, whole: up to `limit` of them, and no more once their payloads and
 * attempts' bodies pass `maxBytes` (so a batch of large events stays small in memory). Read
 * through the index by age: a delivery changes only after its creation, so none created since
 * `before` can be one. `more`: the batch was cut short, so more may wait.
 */
export function coldDeliveries(
  sql: SqlStorage,
  before: string,
  limit: number,
  maxBytes: number,
): { deliveries: ArchivedDelivery[]; more: boolean } {
  const rows = sql.exec<Omit<ArchivedDelivery, 'attempt_log'> & Record<string, SqlStorageValue>>(
    `SELECT ${ROW_COLUMNS} FROM deliveries INDEXED BY deliveries_by_age
     WHERE created_at < ?1 AND status <> 'pending' AND COALESCE(last_attempt_at, created_at) < ?1
     ORDER BY created_at, delivery_id LIMIT ?2`,
    before,
    limit,
  );
  const cold: ArchivedDelivery[] = [];
  let bytes = 0;
  for (const row of rows) {
    const attempts = sql
      .exec<AttemptRow & Record<string, SqlStorageValue>>(
        `SELECT attempt, attempted_at, status, error, duration_ms, body FROM delivery_attempts
         WHERE delivery_id = CAST(?1 AS INTEGER) ORDER BY attempt`,
        row.delivery_id,
      )
      .toArray();
    cold.push({ ...row, attempt_log: attempts });
    bytes += row.payload.length + attempts.reduce((sum, a) => sum + (a.body?.length ?? 0), 0);
    if (bytes >= maxBytes) return { deliveries: cold, more: true };
  }
  return { deliveries: cold, more: cold.length >= limit };
}

/** The dictionary's code of an event type, added on first use. */
function typeCode(sql: SqlStorage, type: string): number {
  sql.exec('INSERT OR IGNORE INTO archive_types (code, type) VALUES ((SELECT COUNT(*) FROM archive_types), ?1)', type);
  const [row] = sql.exec<{ code: number }>('SELECT code FROM archive_types WHERE type = ?1', type).toArray();
  return (row as { code: number }).code;
}

/**
 * The deliveries written to R2 under `key` (in id order) become slim rows: each leaves the hot tables if it is
 * still as it was read (a recovery in between keeps it hot). Returns how many moved.
 */
export function markArchived(storage: DurableObjectStorage, key: string, deliveries: ArchivedDelivery[]): number {
  return storage.transactionSync(() => {
    const { sql } = storage;
    const created = deliveries.map((d) => Date.parse(d.created_at));
    const [object] = sql
      .exec<{ id: number }>(
        `INSERT INTO archive_objects (key, first_id, last_id, first_created, last_created)
         VALUES (?1, CAST(?2 AS INTEGER), CAST(?3 AS INTEGER), ?4, ?5) RETURNING object_id AS id`,
        key,
        deliveries[0]?.delivery_id,
        deliveries[deliveries.length - 1]?.delivery_id,
        Math.min(...created),
        Math.max(...created),
      )
      .toArray();
    let moved = 0;
    for (const d of deliveries) {
      const gone = sql
        .exec(
          `DELETE FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER) AND status = ?2 AND attempts = ?3
           RETURNING delivery_id`,
          d.delivery_id,
          d.status,
          d.attempts,
        )
        .toArray().length;
      if (gone === 0) continue;
      sql.exec('DELETE FROM delivery_attempts WHERE delivery_id = CAST(?1 AS INTEGER)', d.delivery_id);
      sql.exec(
        'INSERT INTO archived (delivery_id, code, object_id, created) VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4)',
        d.delivery_id,
        (STATUS_CODES[d.status] as number) | (typeCode(sql, d.type) << 2),
        object?.id as number,
        Date.parse(d.created_at),
      );
      moved++;
    }
    return moved;
  });
}

/** An archived delivery as a page or a read finds it: its id and its R2 object's key. */
export interface ArchivedRef {
  delivery_id: string;
  key: string;
}

const REF_COLUMNS = 'CAST(a.delivery_id AS TEXT) AS delivery_id, o.key AS key';

/** Archived deliveries before `before` (an id), of `status` and `type` when given, newest first (as newestFirst), at most `limit`. */
export function archivedPage(
  sql: SqlStorage,
  query: { before?: string; status?: string; type?: string; limit: number },
): ArchivedRef[] {
  if (query.status === 'pending') return [];
  return newestFirst(query.before, query.limit, (from, to, wanted) =>
    sql
      .exec<ArchivedRef & Record<string, SqlStorageValue>>(
        `SELECT ${REF_COLUMNS} FROM archived a JOIN archive_objects o ON o.object_id = a.object_id
         WHERE a.delivery_id >= CAST(?1 AS INTEGER) AND a.delivery_id < CAST(?2 AS INTEGER)
           AND (?3 IS NULL OR (a.code & 3) = ?3)
           AND (?4 IS NULL OR (a.code >> 2) = (SELECT code FROM archive_types WHERE type = ?4))
         ORDER BY a.delivery_id DESC LIMIT ?5`,
        from,
        to,
        query.status === undefined ? null : (STATUS_CODES[query.status] ?? -1),
        query.type ?? null,
        wanted,
      )
      .toArray(),
  );
}

/** The archived delivery with this id, or undefined. */
export function archivedOne(sql: SqlStorage, deliveryId: string): ArchivedRef | undefined {
  const [row] = sql
    .exec<ArchivedRef & Record<string, SqlStorageValue>>(
      `SELECT ${REF_COLUMNS} FROM archived a JOIN archive_objects o ON o.object_id = a.object_id
       WHERE a.delivery_id = CAST(?1 AS INTEGER)`,
      deliveryId,
    )
    .toArray();
  return row;
}

/**
 * Archived deliveries that failed, created in [since, until) (ms): read object by object, each
 * over the ids it spans, so only the objects of that time are read.
 */
export function archivedFailed(sql: SqlStorage, since: number, until: number): ArchivedRef[] {
  return sql
    .exec<ArchivedRef & Record<string, SqlStorageValue>>(
      `SELECT ${REF_COLUMNS} FROM archive_objects o JOIN archived a
         ON a.delivery_id BETWEEN o.first_id AND o.last_id AND a.object_id = o.object_id
       WHERE o.first_created < ?3 AND o.last_created >= ?2
         AND (a.code & 3) = ?1 AND a.created >= ?2 AND a.created < ?3 ORDER BY a.delivery_id`,
      STATUS_CODES.failed as number,
      since,
      until,
    )
    .toArray();
}

/**
 * Archived deliveries made hot again, whole (to be recovered): each still archived leaves the
 * archive and its row and attempts are back as they were. The counters already count them, so
 * what the triggers add for the rows put back is taken off again. Returns how many came back.
 */
export function restoreDeliveries(storage: DurableObjectStorage, deliveries: ArchivedDelivery[]): number {
  return storage.transactionSync(() => {
    const { sql } = storage;
    let restored = 0;
    for (const d of deliveries) {
      const out = sql
        .exec('DELETE FROM archived WHERE delivery_id = CAST(?1 AS INTEGER) RETURNING delivery_id', d.delivery_id)
        .toArray().length;
      if (out === 0) continue;
      sql.exec(
        `INSERT INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, attempts, schedule_start,
           recovery_id, next_attempt_at, last_attempt_at, last_status, last_error, created_at)
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
      sql.exec(
        `UPDATE delivery_stats SET succeeded = succeeded - (?2 = 'succeeded'), failed = failed - (?2 = 'failed'),
           cancelled = cancelled - (?2 = 'cancelled') WHERE hour = substr(?1, 1, 13) || ':00:00Z'`,
        d.created_at,
        d.status,
      );
      for (const a of d.attempt_log) {
        sql.exec(
          `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
           VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7)`,
          d.delivery_id,
          a.attempt,
          a.attempted_at,
          a.status,
          a.error,
          a.duration_ms,
          a.body,
        );
        sql.exec(
          `UPDATE delivery_stats SET attempts = attempts - 1 WHERE hour = substr(?1, 1, 13) || ':00:00Z'`,
          a.attempted_at,
        );
      }
      restored++;
    }
    return restored;
  });
}

/** When the oldest archived delivery was created (ms), or null when none is. */
export function oldestArchived(sql: SqlStorage): number | null {
  const [row] = sql.exec<{ at: number | null }>('SELECT MIN(first_created) AS at FROM archive_objects').toArray();
  return row?.at ?? null;
}

/**
 * Retention of the archive, at most `limit` R2 objects a pass: deletes the slim rows created
 * before `before` (ms) among the ids of the objects that began before it, and returns the objects
 * whose deliveries were all created before it: the caller deletes them in R2, then forgets them
 * here (forgetObjects). Returns how many slim rows went.
 */
export function purgeArchived(
  sql: SqlStorage,
  before: number,
  limit: number,
): { rows: number; objects: { object_id: number; key: string }[] } {
  const old = sql
    .exec<{ object_id: number; key: string; last_created: number; first_id: string; last_id: string }>(
      `SELECT object_id, key, last_created, CAST(first_id AS TEXT) AS first_id, CAST(last_id AS TEXT) AS last_id
       FROM archive_objects WHERE first_created < ?1 ORDER BY first_created LIMIT ?2`,
      before,
      limit,
    )
    .toArray();
  let rows = 0;
  for (const o of old) {
    rows += sql.exec(
      `DELETE FROM archived WHERE delivery_id BETWEEN CAST(?1 AS INTEGER) AND CAST(?2 AS INTEGER) AND created < ?3`,
      o.first_id,
      o.last_id,
      before,
    ).rowsWritten;
  }
  const objects = old.filter((o) => o.last_created < before).map(({ object_id, key }) => ({ object_id, key }));
  return { rows, objects };
}

/** The R2 objects deleted there are forgotten here (their slim rows went before them). */
export function forgetObjects(sql: SqlStorage, ids: number[]): void {
  for (const id of ids) sql.exec('DELETE FROM archive_objects WHERE object_id = ?1', id);
}
