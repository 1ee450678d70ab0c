// An endpoint's deliveries, in its Durable Object's own SQLite database: each delivery with the
// body it sends, every attempt as it happened, and hourly counters kept by triggers. Nothing here
// crosses the network: every call is a synchronous statement on the object's storage. Delivery ids
// are int64 and travel as decimal text (CAST in SQL), never doubles.
import { DELIVERY_CURSOR, type Page, pageOf } from '../../core/pages';
import type { NewDelivery } from '../../events/store';

export type { NewDelivery };

/** The object's tables, made when the object first starts (every statement is idempotent). */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS deliveries (
  delivery_id     INTEGER PRIMARY KEY,
  event_id        TEXT    NOT NULL,
  message_id      TEXT    NOT NULL,
  app_id          TEXT    NOT NULL,
  type            TEXT    NOT NULL,
  payload         TEXT    NOT NULL,
  status          TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  schedule_start  INTEGER NOT NULL DEFAULT 0,
  recovery_id     TEXT,
  next_attempt_at TEXT,
  last_attempt_at TEXT,
  last_status     INTEGER,
  last_error      TEXT,
  created_at      TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_by_age ON deliveries (created_at);
CREATE TABLE IF NOT EXISTS delivery_attempts (
  delivery_id  INTEGER NOT NULL,
  attempt      INTEGER NOT NULL,
  attempted_at TEXT    NOT NULL,
  status       INTEGER,
  error        TEXT,
  duration_ms  INTEGER NOT NULL,
  body         TEXT,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS delivery_stats (
  hour      TEXT    PRIMARY KEY,
  pending   INTEGER NOT NULL DEFAULT 0,
  succeeded INTEGER NOT NULL DEFAULT 0,
  failed    INTEGER NOT NULL DEFAULT 0,
  cancelled INTEGER NOT NULL DEFAULT 0,
  attempts  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS delivery_stats_created AFTER INSERT ON deliveries
BEGIN
  INSERT INTO delivery_stats (hour, pending, succeeded, failed, cancelled)
  VALUES (substr(NEW.created_at, 1, 13) || ':00:00Z', NEW.status = 'pending', NEW.status = 'succeeded',
    NEW.status = 'failed', NEW.status = 'cancelled')
  ON CONFLICT (hour) DO UPDATE SET pending = pending + excluded.pending, succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed, cancelled = cancelled + excluded.cancelled;
END;
CREATE TRIGGER IF NOT EXISTS delivery_stats_status AFTER UPDATE OF status ON deliveries
WHEN OLD.status <> NEW.status
BEGIN
  INSERT INTO delivery_stats (hour, pending, succeeded, failed, cancelled)
  VALUES (substr(NEW.created_at, 1, 13) || ':00:00Z',
    (NEW.status = 'pending') - (OLD.status = 'pending'), (NEW.status = 'succeeded') - (OLD.status = 'succeeded'),
    (NEW.status = 'failed') - (OLD.status = 'failed'), (NEW.status = 'cancelled') - (OLD.status = 'cancelled'))
  ON CONFLICT (hour) DO UPDATE SET pending = pending + excluded.pending, succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed, cancelled = cancelled + excluded.cancelled;
END;
CREATE TRIGGER IF NOT EXISTS delivery_stats_attempt AFTER INSERT ON delivery_attempts
BEGIN
  INSERT INTO delivery_stats (hour, attempts) VALUES (substr(NEW.attempted_at, 1, 13) || ':00:00Z', 1)
  ON CONFLICT (hour) DO UPDATE SET attempts = attempts + 1;
END;
CREATE TABLE IF NOT EXISTS endpoint (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`;

/** Makes the object's tables if they are not there yet. */
export function migrateEndpoint(sql: SqlStorage): void {
  sql.exec(SCHEMA);
}

/** The webhook this object is the endpoint of (stored with its first delivery), or null. */
export function endpointWebhook(sql: SqlStorage): string | null {
  const [row] = sql.exec<{ value: string }>(`SELECT value FROM endpoint WHERE key = 'webhook_id'`).toArray();
  return row?.value ?? null;
}

export function rememberWebhook(sql: SqlStorage, webhookId: string): void {
  sql.exec(`INSERT OR IGNORE INTO endpoint (key, value) VALUES ('webhook_id', ?)`, webhookId);
}

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

/** One attempt as recorded. */
export interface AttemptRecord {
  delivery_id: string;
  attempt: number;
  attempted_at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  body: string | null;
}

/**
 * Stores new deliveries, due at their creation; one already here (a handover repeated) is left
 * as it is. Returns how many were new.
 */
export function insertDeliveries(sql: SqlStorage, deliveries: NewDelivery[]): number {
  let added = 0;
  for (const d of deliveries) {
    added += sql
      .exec(
        `INSERT OR IGNORE INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, next_attempt_at, created_at)
       VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7, ?7)
       RETURNING delivery_id`,
        d.delivery_id,
        d.event_id,
        d.message_id,
        d.app_id,
        d.type,
        d.payload,
        d.created_at,
      )
      .toArray().length;
  }
  return added;
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

function insertAttempts(sql: SqlStorage, attempts: AttemptRecord[]): void {
  for (const a of attempts) {
    sql.exec(
      `INSERT OR IGNORE INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
       SELECT CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7
       WHERE EXISTS (SELECT 1 FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER))`,
      a.delivery_id,
      a.attempt,
      a.attempted_at,
      a.status,
      a.error,
      a.duration_ms,
      a.body,
    );
  }
}

/** A pending delivery as the sender reads it here. */
export interface DueDelivery {
  delivery_id: string;
  status: string;
  attempts: number;
  schedule_start: number;
  next_attempt_at: string | null;
  app_id: string;
  /** What receivers see as `webhook-id`. */
  event_id: string;
  payload: string;
}

/** A due delivery of an enabled webhook, with what the webhook (in D1) says about sending it. */
export interface DeliveryToAttempt extends DueDelivery {
  webhook_id: string;
  url: string;
  /** The signing secrets, sealed; `secret` null for a webhook from before secrets, until it gets one. */
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: string | null;
}

/** Pending deliveries due by `until`, the longest waiting first, at most `limit`. */
export function dueDeliveries(sql: SqlStorage, until: string, limit: number): DueDelivery[] {
  return sql
    .exec<DueDelivery & Record<string, SqlStorageValue>>(
      `SELECT CAST(delivery_id AS TEXT) AS delivery_id, status, attempts, schedule_start, next_attempt_at, app_id,
         message_id AS event_id, payload
       FROM deliveries
       WHERE status = 'pending' AND next_attempt_at <= ?1
       ORDER BY next_attempt_at, delivery_id
       LIMIT ?2`,
      until,
      limit,
    )
    .toArray();
}

/** When the earliest pending delivery is due (ms), or null when none is pending. */
export function nextDue(sql: SqlStorage): number | null {
  const [row] = sql
    .exec<{ at: string | null }>(`SELECT MIN(next_attempt_at) AS at FROM deliveries WHERE status = 'pending'`)
    .toArray();
  return row?.at == null ? null : Date.parse(row.at);
}

/** When the oldest delivery was created (ms), or null when there is none: retention's next work. */
export function oldestCreated(sql: SqlStorage): number | null {
  const [row] = sql.exec<{ at: string | null }>('SELECT MIN(created_at) AS at FROM deliveries').toArray();
  return row?.at == null ? null : Date.parse(row.at);
}

/**
 * A delivery's new state. Applied only while it is still pending with `expected` attempts, so a
 * state is never recorded twice.
 */
export interface DeliveryChange {
  delivery_id: string;
  expected: number;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: string | null;
  /** The attempt made now (its time, status, error); null when none was made. */
  attempt: { at: string; status: number | null; error: string | null } | null;
}

/** Records attempts and the deliveries' new states, all or nothing. */
export function recordDeliveries(
  storage: DurableObjectStorage,
  attempts: AttemptRecord[],
  changes: DeliveryChange[],
): void {
  storage.transactionSync(() => {
    insertAttempts(storage.sql, attempts);
    for (const c of changes) {
      storage.sql.exec(
        `UPDATE deliveries
         SET status = ?3, attempts = ?4, next_attempt_at = ?5,
           last_attempt_at = COALESCE(?6, last_attempt_at),
           last_status = CASE WHEN ?6 IS NULL THEN last_status ELSE ?7 END,
           last_error = CASE WHEN ?6 IS NULL THEN last_error ELSE ?8 END
         WHERE delivery_id = CAST(?1 AS INTEGER) AND status = 'pending' AND attempts = ?2`,
        c.delivery_id,
        c.expected,
        c.status,
        c.attempts,
        c.next_attempt_at,
        c.attempt?.at ?? null,
        c.attempt?.status ?? null,
        c.attempt?.error ?? null,
      );
    }
  });
}

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
const DELIVERY_COLUMNS = `CAST(delivery_id AS TEXT) AS delivery_id, message_id AS event_id, type, status, attempts,
  next_attempt_at, last_attempt_at, last_status, last_error, created_at`;

export interface DeliveryPageQuery {
  /** Only deliveries older than this one (the cursor's); undefined for the first page. */
  before?: string;
  status?: string;
  /** Only deliveries of events of this type. */
  type?: string;
  limit: number;
}

/** A keyset page of the deliveries, newest (largest id) first, with the cursor of the next page. */
export function listDeliveries(sql: SqlStorage, { before, status, type, limit }: DeliveryPageQuery): Page<DeliveryRow> {
  const rows = sql
    .exec<DeliveryRow & Record<string, SqlStorageValue>>(
      `SELECT ${DELIVERY_COLUMNS} FROM deliveries
       WHERE (?1 IS NULL OR delivery_id < CAST(?1 AS INTEGER)) AND (?2 IS NULL OR status = ?2)
         AND (?3 IS NULL OR type = ?3)
       ORDER BY delivery_id DESC
       LIMIT ?4`,
      before ?? null,
      status ?? null,
      type ?? null,
      limit + 1,
    )
    .toArray();
  return pageOf(rows, limit, (row) => row.delivery_id, DELIVERY_CURSOR);
}

/** One delivery of the application with every attempt, oldest first; null when there is none such. */
export function getDelivery(
  sql: SqlStorage,
  deliveryId: string,
  appId: string,
): { delivery: DeliveryRow; attempts: AttemptRow[] } | null {
  const [delivery] = sql
    .exec<DeliveryRow & Record<string, SqlStorageValue>>(
      `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER) AND app_id = ?2`,
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

/**
 * Makes every `failed` delivery created in [since, until) pending again, due `now`, with the retry
 * schedule starting over (attempts keep counting). Returns how many.
 */
export function recoverDeliveries(sql: SqlStorage, since: string, until: string, now: string): number {
  return sql
    .exec(
      `UPDATE deliveries SET status = 'pending', schedule_start = attempts, next_attempt_at = ?3
       WHERE status = 'failed' AND created_at >= ?1 AND created_at < ?2
       RETURNING delivery_id`,
      since,
      until,
      now,
    )
    .toArray().length;
}

/** One hour's counters: deliveries created in it by their status now, attempts made in it. */
export interface HourCounts {
  hour: string;
  pending: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  attempts: number;
}

/** The counters of every hour from `since` (the start of an hour, `2026-11-24T14:00:00Z`) on. */
export function readHourCounts(sql: SqlStorage, since: string): HourCounts[] {
  return sql
    .exec<HourCounts & Record<string, SqlStorageValue>>(
      `SELECT hour, pending, succeeded, failed, cancelled, attempts FROM delivery_stats WHERE hour >= ?1 ORDER BY hour`,
      since,
    )
    .toArray();
}

/**
 * Deletes deliveries created before `before` that have ended, with their attempts, and the
 * counters of hours that ended before `before`'s hour, at most `limit` of each; returns how many
 * rows went. A delivery still pending (recovered late in its life) stays until it ends.
 */
export function purgeDeliveries(storage: DurableObjectStorage, before: string, limit: number): number {
  const old = `SELECT delivery_id FROM deliveries
    WHERE created_at < ?1 AND status <> 'pending' ORDER BY created_at, delivery_id LIMIT ?2`;
  return storage.transactionSync(() => {
    const { sql } = storage;
    let rows = sql.exec(`DELETE FROM delivery_attempts WHERE delivery_id IN (${old})`, before, limit).rowsWritten;
    rows += sql.exec(`DELETE FROM deliveries WHERE delivery_id IN (${old})`, before, limit).rowsWritten;
    rows += sql.exec(
      `DELETE FROM delivery_stats WHERE hour IN (
         SELECT hour FROM delivery_stats WHERE hour < substr(?1, 1, 13) || ':00:00Z' ORDER BY hour LIMIT ?2)`,
      before,
      limit,
    ).rowsWritten;
    return rows;
  });
}
