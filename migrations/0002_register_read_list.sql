-- Release 2: registering, reading and listing webhooks (POST and GET).
--
-- Expand only: the release before this one keeps working on the upgraded database (a deploy
-- applies this before the new code is live). Rows that break the new rules (two webhooks of one
-- application with one URL, unnormalised URLs) stay as they are: the rules are checked when a
-- webhook is registered, never by a constraint that old data could fail.

-- webhook_audit is rebuilt, with every record and its audit_id kept, because SQLite cannot alter a
-- CHECK constraint: `action` gains 'create', and `write_id` (the id the Worker gives a request's
-- write, kept across its retries) lets a retried create find the webhook its first attempt made.
CREATE TABLE webhook_audit_v2 (
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
INSERT INTO webhook_audit_v2 (audit_id, webhook_id, app_id, action, row_before, actor, actor_jti, request_id, created_at)
  SELECT audit_id, webhook_id, app_id, action, row_before, actor, actor_jti, request_id, created_at
  FROM webhook_audit;
DROP TABLE webhook_audit;
ALTER TABLE webhook_audit_v2 RENAME TO webhook_audit;
CREATE INDEX webhook_audit_by_webhook ON webhook_audit (webhook_id, action);
CREATE UNIQUE INDEX webhook_audit_by_write ON webhook_audit (write_id) WHERE write_id IS NOT NULL;

-- POST's duplicate check: one application, one normalised URL. Not UNIQUE, so legacy duplicates
-- cannot make the upgrade fail.
CREATE INDEX webhooks_by_app_url ON webhooks (app_id, url);

-- Idempotency-Key: what the first successful POST under a key made (the webhook's row as created,
-- from which its reply is made again), per application and key, for 24 hours
-- (purged by the Worker's Cron Trigger). Stored in the same batch as the webhook it created.
CREATE TABLE idempotency_keys (
  app_id       TEXT    NOT NULL,
  idem_key     TEXT    NOT NULL,
  request_hash TEXT    NOT NULL,
  webhook_id   INTEGER NOT NULL,
  webhook_row  TEXT    NOT NULL CHECK (json_valid(webhook_row)),
  created_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (app_id, idem_key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
