// The endpoint object's own SQLite database: each delivery with the body it sends, every attempt
// as it happened, hourly counters kept by triggers (pending ones counted when read), and the endpoint's own facts (its webhook).
// Its schema, by versioned steps (src/platform/object-schema.ts): append a step, never edit one.
import type { SchemaStep } from '../../platform/object-schema';

/**
 * Version 1: the tables as the first release with the objects made them, on every start, with
 * `IF NOT EXISTS`; on an object that release wrote, they change nothing.
 */
const V1 = `
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

/**
 * Step 2: fewer counter writes. Pending deliveries are counted when read, from the index of pending
 * ones (store/log.ts), so the counters keep only what has ended and the attempts: a delivery's
 * change (its status, its attempts) is counted by one trigger on the deliveries, in one row when
 * the attempt's hour is the delivery's (two when not), where three triggers wrote three before;
 * the attempts' own trigger goes (the attempt is counted from its delivery's change). A delivery
 * stored already ended (seeded) counts as before, with its attempts in the hour of its last.
 */
const V2 = `
DROP TRIGGER delivery_stats_created;
DROP TRIGGER delivery_stats_status;
DROP TRIGGER delivery_stats_attempt;
UPDATE delivery_stats SET pending = 0 WHERE pending <> 0;
CREATE TRIGGER delivery_stats_created AFTER INSERT ON deliveries
WHEN NEW.status <> 'pending' OR NEW.attempts > 0
BEGIN
  INSERT INTO delivery_stats (hour, succeeded, failed, cancelled)
  SELECT substr(NEW.created_at, 1, 13) || ':00:00Z', NEW.status = 'succeeded', NEW.status = 'failed',
    NEW.status = 'cancelled'
  WHERE NEW.status <> 'pending'
  ON CONFLICT (hour) DO UPDATE SET succeeded = succeeded + excluded.succeeded, failed = failed + excluded.failed,
    cancelled = cancelled + excluded.cancelled;
  INSERT INTO delivery_stats (hour, attempts)
  SELECT substr(NEW.last_attempt_at, 1, 13) || ':00:00Z', NEW.attempts
  WHERE NEW.attempts > 0 AND NEW.last_attempt_at IS NOT NULL
  ON CONFLICT (hour) DO UPDATE SET attempts = attempts + excluded.attempts;
END;
CREATE TRIGGER delivery_stats_changed AFTER UPDATE OF status, attempts ON deliveries
WHEN OLD.status <> NEW.status OR NEW.attempts > OLD.attempts
BEGIN
  INSERT INTO delivery_stats (hour, succeeded, failed, cancelled, attempts)
  SELECT substr(NEW.created_at, 1, 13) || ':00:00Z',
    (NEW.status = 'succeeded') - (OLD.status = 'succeeded'), (NEW.status = 'failed') - (OLD.status = 'failed'),
    (NEW.status = 'cancelled') - (OLD.status = 'cancelled'),
    CASE WHEN substr(NEW.last_attempt_at, 1, 13) = substr(NEW.created_at, 1, 13)
      THEN max(NEW.attempts - OLD.attempts, 0) ELSE 0 END
  WHERE OLD.status <> NEW.status
    OR (NEW.attempts > OLD.attempts AND substr(NEW.last_attempt_at, 1, 13) = substr(NEW.created_at, 1, 13))
  ON CONFLICT (hour) DO UPDATE SET succeeded = succeeded + excluded.succeeded, failed = failed + excluded.failed,
    cancelled = cancelled + excluded.cancelled, attempts = attempts + excluded.attempts;
  INSERT INTO delivery_stats (hour, attempts)
  SELECT substr(NEW.last_attempt_at, 1, 13) || ':00:00Z', NEW.attempts - OLD.attempts
  WHERE NEW.attempts > OLD.attempts AND substr(NEW.last_attempt_at, 1, 13) <> substr(NEW.created_at, 1, 13)
  ON CONFLICT (hour) DO UPDATE SET attempts = attempts + excluded.attempts;
END;
`;

/**
 * Step 3: failed attempts counted per hour (by when they were made: no 2xx, a connection failure
 * included), so health counts the failures of deliveries still retrying; the hours kept so far
 * counted once from their attempts.
 */
const FAILED_ATTEMPTS = `
ALTER TABLE delivery_stats ADD COLUMN failed_attempts INTEGER NOT NULL DEFAULT 0;
UPDATE delivery_stats SET failed_attempts = f.n
FROM (SELECT substr(attempted_at, 1, 13) || ':00:00Z' AS hour, COUNT(*) AS n FROM delivery_attempts
      WHERE status IS NULL OR status NOT BETWEEN 200 AND 299 GROUP BY 1) AS f
WHERE delivery_stats.hour = f.hour;
CREATE TRIGGER IF NOT EXISTS delivery_stats_failed_attempt AFTER INSERT ON delivery_attempts
WHEN NEW.status IS NULL OR NEW.status NOT BETWEEN 200 AND 299
BEGIN
  INSERT INTO delivery_stats (hour, failed_attempts) VALUES (substr(NEW.attempted_at, 1, 13) || ':00:00Z', 1)
  ON CONFLICT (hour) DO UPDATE SET failed_attempts = failed_attempts + 1;
END;
`;

/**
 * Step 4: the archive (docs/storage.md, "The archive"). A delivery that ended and went to R2
 * keeps one slim row here: its id, its status and type as one small code (`status | type << 2`,
 * the type by a dictionary), its R2 object (by number), its creation in milliseconds. Each R2
 * object has a row: its key, the ids and creation times its deliveries span.
 */
const ARCHIVE = `
CREATE TABLE archive_types (code INTEGER PRIMARY KEY, type TEXT NOT NULL UNIQUE);
CREATE TABLE archive_objects (
  object_id     INTEGER PRIMARY KEY,
  key           TEXT    NOT NULL,
  first_id      INTEGER NOT NULL,
  last_id       INTEGER NOT NULL,
  first_created INTEGER NOT NULL,
  last_created  INTEGER NOT NULL
);
CREATE INDEX archive_objects_by_age ON archive_objects (first_created);
CREATE TABLE archived (
  delivery_id INTEGER PRIMARY KEY,
  code        INTEGER NOT NULL,
  object_id   INTEGER NOT NULL,
  created     INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** The endpoint object's schema steps: step n takes version n - 1 to n. */
export const ENDPOINT_SCHEMA: readonly SchemaStep[] = [
  (sql) => sql.exec(V1),
  (sql) => sql.exec(V2),
  (sql) => sql.exec(FAILED_ATTEMPTS),
  (sql) => sql.exec(ARCHIVE),
];
