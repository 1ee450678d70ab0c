-- Release 3: deliveries. Events reach the webhooks, signed, retried and recorded.
--
-- Expand only: the release before this one keeps working on the upgraded database (a deploy
-- applies this before the new code is live). Every new column of `webhooks` has a default or is
-- nullable, and the old code names the columns it writes.

-- The event types a webhook receives (a JSON array of strings); NULL: every type. Webhooks
-- registered before this release receive every type.
ALTER TABLE webhooks ADD COLUMN event_types TEXT CHECK (event_types IS NULL OR json_valid(event_types));
-- The signing secret, encrypted (AES-256-GCM under the Worker secret WEBHOOK_SECRET_KEY); never
-- clear text. NULL for a webhook registered before secrets existed: it gets one the first time
-- one is needed. previous_secret signs too until previous_secret_until (a rotation's overlap).
ALTER TABLE webhooks ADD COLUMN secret TEXT;
ALTER TABLE webhooks ADD COLUMN previous_secret TEXT;
ALTER TABLE webhooks ADD COLUMN previous_secret_until TEXT;
-- The first failed attempt since the last successful one (NULL while healthy): auto-disable.
ALTER TABLE webhooks ADD COLUMN failing_since TEXT;
-- 0: the URL was stored before the service normalised URLs, or by the release before this one,
-- and has not been brought to its normalised form yet. The Worker normalises an application's
-- rows before it registers a webhook for it, so duplicates are found against every row.
ALTER TABLE webhooks ADD COLUMN url_checked INTEGER NOT NULL DEFAULT 1 CHECK (url_checked IN (0, 1));
UPDATE webhooks SET url_checked = 0;
CREATE INDEX webhooks_unchecked_urls ON webhooks (app_id) WHERE url_checked = 0;

-- webhook_audit is rebuilt, every record and its audit_id kept, because SQLite cannot alter a
-- CHECK constraint: `action` gains 'rotate_secret', and `reason` says why the service itself
-- made a change (actor 'system': a webhook disabled after failing, or answering 410 Gone).
CREATE TABLE webhook_audit_v3 (
  audit_id   INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id INTEGER NOT NULL,
  app_id     TEXT    NOT NULL,
  action     TEXT    NOT NULL CHECK (action IN ('create', 'enable', 'disable', 'delete', 'rotate_secret')),
  row_before TEXT    NOT NULL CHECK (json_valid(row_before)),
  actor      TEXT    NOT NULL,
  actor_jti  TEXT,
  request_id TEXT    NOT NULL,
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  write_id   TEXT,
  reason     TEXT
);
INSERT INTO webhook_audit_v3 (audit_id, webhook_id, app_id, action, row_before, actor, actor_jti, request_id, created_at, write_id)
  SELECT audit_id, webhook_id, app_id, action, row_before, actor, actor_jti, request_id, created_at, write_id
  FROM webhook_audit;
DROP TABLE webhook_audit;
ALTER TABLE webhook_audit_v3 RENAME TO webhook_audit;
CREATE INDEX webhook_audit_by_webhook ON webhook_audit (webhook_id, action);
CREATE UNIQUE INDEX webhook_audit_by_write ON webhook_audit (write_id) WHERE write_id IS NOT NULL;

-- An event the platform published, and the exact body every attempt of it sends.
-- source_key makes publishing idempotent per application: 'id:' + the publisher's id, or
-- 'msg:' + the queue message's id; NULL when neither (each publish is then a new event).
CREATE TABLE events (
  event_id   TEXT PRIMARY KEY,
  app_id     TEXT NOT NULL,
  source_key TEXT,
  type       TEXT NOT NULL,
  payload    TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE UNIQUE INDEX events_by_source ON events (app_id, source_key) WHERE source_key IS NOT NULL;
CREATE INDEX events_by_age ON events (created_at);

-- One event to one webhook. Written in the same batch as its event; the queue only carries its id
-- and its queue generation: queue_gen goes up whenever the delivery is queued anew (the Cron
-- Trigger's requeue, a recovery), and a message of an older generation is dropped, so copies
-- never multiply. schedule_start: the attempts made before the retry schedule last (re)started;
-- recovery_id: the request that did that (so a retried recovery finds what it recovered).
CREATE TABLE deliveries (
  delivery_id     INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id        TEXT    NOT NULL,
  webhook_id      INTEGER NOT NULL,
  app_id          TEXT    NOT NULL,
  status          TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  schedule_start  INTEGER NOT NULL DEFAULT 0,
  queue_gen       INTEGER NOT NULL DEFAULT 0,
  recovery_id     TEXT,
  next_attempt_at TEXT,
  last_attempt_at TEXT,
  last_status     INTEGER,
  last_error      TEXT,
  created_at      TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (event_id, webhook_id)
);
CREATE INDEX deliveries_by_webhook ON deliveries (webhook_id, delivery_id);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_by_age ON deliveries (created_at);

-- Every attempt as it happened: HTTP status or error kind, duration, the first 1 KiB of the reply.
CREATE TABLE delivery_attempts (
  delivery_id  INTEGER NOT NULL,
  attempt      INTEGER NOT NULL,
  attempted_at TEXT    NOT NULL,
  status       INTEGER,
  error        TEXT CHECK (error IS NULL OR error IN ('timeout', 'connection', 'tls', 'url_refused')),
  duration_ms  INTEGER NOT NULL,
  body         TEXT,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;
