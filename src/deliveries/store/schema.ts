// The endpoint object's own SQLite database: each delivery with the body it sends, every attempt
// as it happened, hourly counters kept by triggers, and the endpoint's own facts (its webhook).
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
 * Version 2: the archive (docs/storage.md, "The archive"). A delivery that ended and went to R2
 * keeps one slim row here: its id, its status and type as one small code (`status | type << 2`,
 * the type by a dictionary), its R2 object (by number), its creation in milliseconds. Each R2
 * object has a row: its key, the ids and creation times its deliveries span.
 */
const V2 = `
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
export const ENDPOINT_SCHEMA: readonly SchemaStep[] = [(sql) => sql.exec(V1), (sql) => sql.exec(V2)];
