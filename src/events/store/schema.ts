// The application object's own SQLite database: every event it published (its source key makes
// publishing idempotent), the index of its deliveries (which endpoint holds each), the outbox of
// deliveries not yet handed to their endpoints' objects (one row per event: its body once, and the
// deliveries still to hand over), and the last delivery id given. The bodies live with the
// deliveries, in the endpoints' objects.
const SCHEMA = `
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

/** The webhooks whose endpoints hold deliveries (store/endpoints.ts); filled from the index once. */
const ENDPOINTS = `
CREATE TABLE endpoints (webhook_id TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO endpoints (webhook_id) SELECT DISTINCT webhook_id FROM deliveries;
`;

export function migrateApplication(sql: SqlStorage): void {
  sql.exec(SCHEMA);
  const [known] = sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'endpoints'`).toArray();
  if (known === undefined) sql.exec(ENDPOINTS);
}
