-- Release 1: the schema as first deployed (schema.sql before versioned migrations). Written with
-- IF NOT EXISTS, so a database that was created from that schema.sql takes it as a no-op and
-- is then upgraded by the migrations after it. Never edit a released migration.

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

CREATE INDEX IF NOT EXISTS webhooks_by_app ON webhooks (app_id);

-- Append-only history: one record for every change the API makes (enable, disable, delete),
-- written in the same D1 batch (transaction) as the change. row_before is the whole row before
-- the change, so a deleted webhook is never lost. The Worker only ever INSERTs here.
CREATE TABLE IF NOT EXISTS webhook_audit (
  audit_id   INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id INTEGER NOT NULL,
  app_id     TEXT    NOT NULL,
  action     TEXT    NOT NULL CHECK (action IN ('enable', 'disable', 'delete')),
  row_before TEXT    NOT NULL CHECK (json_valid(row_before)),
  actor      TEXT    NOT NULL,
  actor_jti  TEXT,
  request_id TEXT    NOT NULL,
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- DELETE's idempotency check looks up the delete record of one webhook.
CREATE INDEX IF NOT EXISTS webhook_audit_by_webhook ON webhook_audit (webhook_id, action);
