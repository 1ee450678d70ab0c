-- Release 4: the application portal's operations (PATCH, stats, resend, the event catalog).
--
-- Expand only: the release before this one keeps working on the upgraded database (a deploy
-- applies this before the new code is live). It names the columns it writes, the new columns are
-- nullable, and the triggers below count what it writes too.

-- What the application says its webhook is for (at most 256 characters), and the most deliveries
-- per second it wants (1 to 1,000; stored and shown; enforced by a later release). NULL for
-- webhooks from before this release.
ALTER TABLE webhooks ADD COLUMN description TEXT CHECK (description IS NULL OR length(description) <= 256);
ALTER TABLE webhooks ADD COLUMN rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit BETWEEN 1 AND 1000);

-- A resend is a new event (its own event_id, so it can have a second delivery to the same webhook)
-- that receivers must see as the original: message_id is the event_id of the event it resends,
-- sent as `webhook-id` and shown as the delivery's event_id. NULL: the event's own event_id.
ALTER TABLE events ADD COLUMN message_id TEXT;

-- webhook_audit is rebuilt, every record and its audit_id kept, because SQLite cannot alter a
-- CHECK constraint: `action` gains 'update' (PATCH).
CREATE TABLE webhook_audit_v4 (
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
INSERT INTO webhook_audit_v4 (audit_id, webhook_id, app_id, action, row_before, actor, actor_jti, request_id, created_at, write_id, reason)
  SELECT audit_id, webhook_id, app_id, action, row_before, actor, actor_jti, request_id, created_at, write_id, reason
  FROM webhook_audit;
DROP TABLE webhook_audit;
ALTER TABLE webhook_audit_v4 RENAME TO webhook_audit;
CREATE INDEX webhook_audit_by_webhook ON webhook_audit (webhook_id, action);
CREATE UNIQUE INDEX webhook_audit_by_write ON webhook_audit (write_id) WHERE write_id IS NOT NULL;

-- Per webhook and hour (ISO 8601 start of the hour, '2026-11-24T14:00:00Z'): the deliveries created
-- in that hour by their status now, and the attempts made in that hour. Kept by the triggers
-- below, so GET .../stats reads at most 168 rows whatever the volume; the Cron Trigger deletes
-- hours past the retention.
CREATE TABLE delivery_stats (
  webhook_id INTEGER NOT NULL,
  hour       TEXT    NOT NULL,
  pending    INTEGER NOT NULL DEFAULT 0,
  succeeded  INTEGER NOT NULL DEFAULT 0,
  failed     INTEGER NOT NULL DEFAULT 0,
  cancelled  INTEGER NOT NULL DEFAULT 0,
  attempts   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (webhook_id, hour)
) WITHOUT ROWID;
CREATE INDEX delivery_stats_by_hour ON delivery_stats (hour);

CREATE TRIGGER delivery_stats_created AFTER INSERT ON deliveries
BEGIN
  INSERT INTO delivery_stats (webhook_id, hour, pending, succeeded, failed, cancelled)
  VALUES (NEW.webhook_id, substr(NEW.created_at, 1, 13) || ':00:00Z',
    NEW.status = 'pending', NEW.status = 'succeeded', NEW.status = 'failed', NEW.status = 'cancelled')
  ON CONFLICT (webhook_id, hour) DO UPDATE SET
    pending = pending + excluded.pending, succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed, cancelled = cancelled + excluded.cancelled;
END;

CREATE TRIGGER delivery_stats_status AFTER UPDATE OF status ON deliveries
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

CREATE TRIGGER delivery_stats_attempt AFTER INSERT ON delivery_attempts
BEGIN
  INSERT INTO delivery_stats (webhook_id, hour, attempts)
  SELECT webhook_id, substr(NEW.attempted_at, 1, 13) || ':00:00Z', 1
  FROM deliveries WHERE delivery_id = NEW.delivery_id
  ON CONFLICT (webhook_id, hour) DO UPDATE SET attempts = attempts + 1;
END;

-- The counts of the deliveries and attempts already stored.
INSERT INTO delivery_stats (webhook_id, hour, pending, succeeded, failed, cancelled)
  SELECT webhook_id, substr(created_at, 1, 13) || ':00:00Z', SUM(status = 'pending'), SUM(status = 'succeeded'),
    SUM(status = 'failed'), SUM(status = 'cancelled')
  FROM deliveries
  GROUP BY 1, 2;
INSERT INTO delivery_stats (webhook_id, hour, attempts)
  SELECT d.webhook_id, substr(a.attempted_at, 1, 13) || ':00:00Z', COUNT(*)
  FROM delivery_attempts AS a JOIN deliveries AS d ON d.delivery_id = a.delivery_id
  WHERE true
  GROUP BY 1, 2
  ON CONFLICT (webhook_id, hour) DO UPDATE SET attempts = attempts + excluded.attempts;
