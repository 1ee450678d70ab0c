// The application object's own SQLite database: the events it published within the deduplication
// window, by source key (publishing is idempotent per key), its endpoints' numbers (which delivery
// ids carry, so a delivery is found by its id), the outbox of
// deliveries not yet handed to their endpoints' objects (one row per event: its body once, and the
// deliveries still to hand over), the last delivery id given, and the webhooks' value sets (what
// content filters look up). The bodies live with the
// deliveries, in the endpoints' objects. Its schema, by versioned steps
// (src/platform/object-schema.ts): append a step, never edit one.
import type { SchemaStep } from '../../platform/object-schema';

/**
 * Version 1: the tables as the first release with the objects made them, on every start, with
 * `IF NOT EXISTS`; on an object that release wrote, they change nothing.
 */
const V1 = `
CREATE TABLE IF NOT EXISTS events (
  event_id   TEXT PRIMARY KEY,
  source_key TEXT UNIQUE,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_by_age ON events (created_at);
CREATE TABLE IF NOT EXISTS deliveries (
  delivery_id INTEGER PRIMARY KEY,
  webhook_id  TEXT    NOT NULL,
  created_at  TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_by_age ON deliveries (created_at);
CREATE TABLE IF NOT EXISTS outbox (
  event_id TEXT PRIMARY KEY,
  event    TEXT NOT NULL,
  targets  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ids (name TEXT PRIMARY KEY, last TEXT NOT NULL) WITHOUT ROWID;
`;

/**
 * Step 2: the webhooks whose endpoints hold deliveries (store/endpoints.ts), filled from the
 * deliveries' index of an object written before it.
 */
const V2 = `
CREATE TABLE endpoints (webhook_id TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO endpoints (webhook_id) SELECT DISTINCT webhook_id FROM deliveries;
`;

/**
 * Step 3: the webhooks' value sets (what a content filter's `$in_set` looks up): one row per
 * value, its primary key the lookup, and each set's size.
 */
const V3 = `
CREATE TABLE webhook_values (
  webhook_id TEXT NOT NULL,
  value      TEXT NOT NULL,
  PRIMARY KEY (webhook_id, value)
) WITHOUT ROWID;
CREATE TABLE value_counts (webhook_id TEXT PRIMARY KEY, count INTEGER NOT NULL) WITHOUT ROWID;
`;

/**
 * Step 4: events kept by their source key for the deduplication window only (store/dedupe.ts),
 * and a number for each endpoint, which the delivery ids made from now on carry
 * (store/delivery-ids.ts): the endpoints noted before are numbered in the order of their ids. The
 * events and deliveries tables get no new rows; theirs stay until the retention removes them.
 */
const V4 = `
CREATE TABLE dedupe (
  source_key TEXT PRIMARY KEY,
  event_id   TEXT NOT NULL,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX dedupe_by_age ON dedupe (created_at);
ALTER TABLE endpoints ADD COLUMN n INTEGER;
UPDATE endpoints SET n = (SELECT COUNT(*) FROM endpoints AS e WHERE e.webhook_id <= endpoints.webhook_id);
CREATE UNIQUE INDEX endpoints_by_number ON endpoints (n);
`;

/**
 * Step 5: events' journeys (store/journeys.ts): for each event stored with deliveries, the
 * endpoint numbers it was handed to, by its sequence number (which its id and its deliveries' ids
 * carry). Events stored before have none.
 */
const V5 = `
CREATE TABLE journeys (
  sequence  INTEGER PRIMARY KEY,
  created   INTEGER NOT NULL,
  endpoints TEXT    NOT NULL
);
`;

/** The application object's schema steps: step n takes version n - 1 to n. */
export const APPLICATION_SCHEMA: readonly SchemaStep[] = [
  (sql) => sql.exec(V1),
  (sql) => sql.exec(V2),
  (sql) => sql.exec(V3),
  (sql) => sql.exec(V4),
  (sql) => sql.exec(V5),
];
