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
  updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  -- The event types it receives (JSON array of strings); NULL: every type.
  event_types TEXT CHECK (event_types IS NULL OR json_valid(event_types)),
  -- Signing secret, sealed (AES-256-GCM under a key of WEBHOOK_SECRET_KEYS, named in front of it:
  -- `v2.<key id>.`, or `v1.` for WEBHOOK_SECRET_KEY's), never clear text; NULL for a webhook
  -- registered before secrets existed, until one is needed. previous_secret signs too
  -- until previous_secret_until (a rotation's overlap).
  secret TEXT,
  previous_secret TEXT,
  previous_secret_until TEXT,
  -- First failed attempt since the last successful one; NULL while healthy (auto-disable).
  failing_since TEXT,
  -- 0: a URL stored before URLs were normalised, not normalised yet (done before the
  -- application's next registration, so duplicates are found against every row).
  url_checked INTEGER NOT NULL DEFAULT 1 CHECK (url_checked IN (0, 1)),
  -- What the application says it is for; NULL for webhooks from before descriptions.
  description TEXT CHECK (description IS NULL OR length(description) <= 256),
  -- The most deliveries per second the application wants (stored and shown; enforced later); NULL: no limit of its own.
  rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit BETWEEN 1 AND 1000)
);

-- Listing (keyset on the rowid within one application) and ownership checks.
CREATE INDEX IF NOT EXISTS webhooks_by_app ON webhooks (app_id);
-- POST's duplicate check. Not UNIQUE: rows from before the rule may repeat a URL.
CREATE INDEX IF NOT EXISTS webhooks_by_app_url ON webhooks (app_id, url);
CREATE INDEX IF NOT EXISTS webhooks_unchecked_urls ON webhooks (app_id) WHERE url_checked = 0;

-- Append-only history: one record for every change (create, enable, disable, delete,
-- rotate_secret, update), by an application or by the service itself (actor 'system', with a reason:
-- a webhook disabled after failing, or answering 410 Gone), written in the same D1 batch (transaction) as the change. row_before is the whole row
-- before the change (for create: the row as created), so a deleted webhook is never lost.
-- write_id is the id the Worker gives one request's write, kept across its retries, so a retried
-- create finds the webhook its first attempt made. The Worker only ever INSERTs here.
CREATE TABLE IF NOT EXISTS webhook_audit (
  audit_id   INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id INTEGER NOT NULL,
  app_id     TEXT    NOT NULL,
  action     TEXT    NOT NULL CHECK (action IN ('create', 'enable', 'disable', 'delete', 'rotate_secret', 'update')),
  row_before TEXT    NOT NULL CHECK (json_valid(row_before)),
  actor      TEXT    NOT NULL,
  actor_jti  TEXT,
  request_id TEXT    NOT NULL,
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  write_id   TEXT,
  reason     TEXT
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

-- The tables below (events, deliveries, delivery_attempts, delivery_stats) are the release before's:
-- events, deliveries and attempts now live in Durable Objects (docs/storage.md). The Cron Trigger
-- moves what the release before stored here, so they are empty once an upgrade is over; a later
-- release drops them.
--
-- An event the platform published, and the exact body every attempt of it sends.
-- source_key makes publishing idempotent per application: 'id:' + the publisher's id, or
-- 'msg:' + the queue message's id; NULL when neither (each publish is then a new event).
CREATE TABLE IF NOT EXISTS events (
  event_id   TEXT PRIMARY KEY,
  app_id     TEXT NOT NULL,
  source_key TEXT,
  type       TEXT NOT NULL,
  payload    TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  -- A resend: the event_id of the event it sends again, which receivers see as `webhook-id` and
  -- the delivery log shows as event_id. NULL: the event's own event_id.
  message_id TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_source ON events (app_id, source_key) WHERE source_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_age ON events (created_at);

-- One event to one webhook. Written in the same batch as its event; the queue only carries its id
-- and its queue generation: queue_gen goes up whenever the delivery is queued anew (the Cron
-- Trigger's requeue, a recovery), and a message of an older generation is dropped, so copies
-- never multiply. schedule_start: the attempts made before the retry schedule last (re)started;
-- recovery_id: the request that did that (so a retried recovery finds what it recovered).
CREATE TABLE IF NOT EXISTS deliveries (
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
  -- The move to the Durable Objects: when the delivery was claimed (taken from the release
  -- before), and its next attempt time then (next_attempt_at is NULL once claimed).
  move_claimed_at TEXT,
  move_due_at     TEXT,
  UNIQUE (event_id, webhook_id)
);
CREATE INDEX IF NOT EXISTS deliveries_by_webhook ON deliveries (webhook_id, delivery_id);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_by_age ON deliveries (created_at);
CREATE INDEX IF NOT EXISTS deliveries_claimed ON deliveries (move_claimed_at) WHERE move_claimed_at IS NOT NULL;

-- Every attempt as it happened: HTTP status or error kind, duration, the first 1 KiB of the reply.
CREATE TABLE IF NOT EXISTS delivery_attempts (
  delivery_id  INTEGER NOT NULL,
  attempt      INTEGER NOT NULL,
  attempted_at TEXT    NOT NULL,
  status       INTEGER,
  error        TEXT CHECK (error IS NULL OR error IN ('timeout', 'connection', 'tls', 'url_refused')),
  duration_ms  INTEGER NOT NULL,
  body         TEXT,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;

-- Per webhook and hour (ISO 8601 start of the hour, '2026-11-24T14:00:00Z'): the deliveries created
-- in that hour by their status now, and the attempts made in that hour. Kept by the triggers
-- below, so GET .../stats reads at most 168 rows whatever the volume; the Cron Trigger deletes
-- hours past the retention.
CREATE TABLE IF NOT EXISTS delivery_stats (
  webhook_id INTEGER NOT NULL,
  hour       TEXT    NOT NULL,
  pending    INTEGER NOT NULL DEFAULT 0,
  succeeded  INTEGER NOT NULL DEFAULT 0,
  failed     INTEGER NOT NULL DEFAULT 0,
  cancelled  INTEGER NOT NULL DEFAULT 0,
  attempts   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (webhook_id, hour)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS delivery_stats_by_hour ON delivery_stats (hour);

CREATE TRIGGER IF NOT EXISTS delivery_stats_created AFTER INSERT ON deliveries
BEGIN
  INSERT INTO delivery_stats (webhook_id, hour, pending, succeeded, failed, cancelled)
  VALUES (NEW.webhook_id, substr(NEW.created_at, 1, 13) || ':00:00Z',
    NEW.status = 'pending', NEW.status = 'succeeded', NEW.status = 'failed', NEW.status = 'cancelled')
  ON CONFLICT (webhook_id, hour) DO UPDATE SET
    pending = pending + excluded.pending, succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed, cancelled = cancelled + excluded.cancelled;
END;

CREATE TRIGGER IF NOT EXISTS delivery_stats_status AFTER UPDATE OF status ON deliveries
WHEN OLD.status <> NEW.status
BEGIN
  INSERT INTO delivery_stats (webhook_id, hour, pending, succeeded, failed, cancelled)
  VALUES (NEW.webhook_id, substr(NEW.created_at, 1, 13) || ':00:00Z',
    (NEW.status = 'pending') - (OLD.status = 'pending'), (NEW.status = 'succeeded') - (OLD.status = 'succeeded'),
    (NEW.status = 'failed') - (OLD.status = 'failed'), (NEW.status = 'cancelled') - (OLD.status = 'cancelled'))
  ON CONFLICT (webhook_id, hour) DO UPDATE SET
    pending = pending + excluded.pending, succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed, cancelled = cancelled + excluded.cancelled;
END;

CREATE TRIGGER IF NOT EXISTS delivery_stats_attempt AFTER INSERT ON delivery_attempts
BEGIN
  INSERT INTO delivery_stats (webhook_id, hour, attempts)
  SELECT webhook_id, substr(NEW.attempted_at, 1, 13) || ':00:00Z', 1
  FROM deliveries WHERE delivery_id = NEW.delivery_id
  ON CONFLICT (webhook_id, hour) DO UPDATE SET attempts = attempts + 1;
END;
