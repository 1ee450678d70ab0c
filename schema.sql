-- The complete current schema, in one place to read. Databases are created and upgraded by the
-- versioned migrations in migrations/ (`wrangler d1 migrations apply DB`), never from this file;
-- a test proves that applying every migration gives exactly this schema. Change the schema by
-- adding a migration, then mirror it here. Safe to apply any number of times.

-- Registered webhooks. AUTOINCREMENT: an id is never handed out twice, so a stale id held by a
-- client can never address a newer webhook.
CREATE TABLE IF NOT EXISTS webhooks (
  webhook_id INTEGER PRIMARY KEY AUTOINCREMENT CHECK (webhook_id > 0),
  app_id     TEXT    NOT NULL CHECK (length(app_id) > 0),
  url        TEXT    NOT NULL,
  is_enabled INTEGER NOT NULL DEFAULT 1 CHECK (is_enabled IN (0, 1)),
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- Listing (keyset on the rowid within one application) and ownership checks.
CREATE INDEX IF NOT EXISTS webhooks_by_app ON webhooks (app_id);
-- POST's duplicate check. Not UNIQUE: rows from before the rule may repeat a URL.
CREATE INDEX IF NOT EXISTS webhooks_by_app_url ON webhooks (app_id, url);

-- Append-only history: one record for every change the API makes (create, enable, disable,
-- delete), written in the same D1 batch (transaction) as the change. row_before is the whole row
-- before the change (for create: the row as created), so a deleted webhook is never lost.
-- write_id is the id the Worker gives one request's write, kept across its retries, so a retried
-- create finds the webhook its first attempt made. The Worker only ever INSERTs here.
CREATE TABLE IF NOT EXISTS webhook_audit (
  audit_id   INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id INTEGER NOT NULL,
  app_id     TEXT    NOT NULL,
  action     TEXT    NOT NULL CHECK (action IN ('create', 'enable', 'disable', 'delete')),
  row_before TEXT    NOT NULL CHECK (json_valid(row_before)),
  actor      TEXT    NOT NULL,
  actor_jti  TEXT,
  request_id TEXT    NOT NULL,
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  write_id   TEXT
);

-- DELETE's idempotency check looks up the delete record of one webhook.
CREATE INDEX IF NOT EXISTS webhook_audit_by_webhook ON webhook_audit (webhook_id, action);
CREATE UNIQUE INDEX IF NOT EXISTS webhook_audit_by_write ON webhook_audit (write_id) WHERE write_id IS NOT NULL;

-- Idempotency-Key: what the first successful POST under a key made (the webhook's row as created,
-- from which its reply is made again), per application and key, for 24 hours
-- (purged by the Worker's Cron Trigger). Stored in the same batch as the webhook it created.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  app_id       TEXT    NOT NULL,
  idem_key     TEXT    NOT NULL,
  request_hash TEXT    NOT NULL,
  webhook_id   INTEGER NOT NULL,
  webhook_row  TEXT    NOT NULL CHECK (json_valid(webhook_row)),
  created_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (app_id, idem_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_keys_by_age ON idempotency_keys (created_at);
