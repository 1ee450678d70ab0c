-- The complete current schema, in one place to read. Databases are created and upgraded by the
-- versioned migrations in migrations/ (`wrangler d1 migrations apply DB`), then those of
-- migrations/post-deploy/ once the code is live (scripts/post-deploy.mjs), never from this file;
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
  -- The most delivery attempts per second the application wants its endpoint sent (1-1,000), enforced
  -- by the endpoint's object together with ENDPOINT_RATE_LIMIT (the lower applies); NULL: no limit of its own.
  rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit BETWEEN 1 AND 1000),
  -- Its content filter (docs/filters.md), the JSON text as sent; NULL: none, every event of its
  -- types is delivered. Its value set lives in the application's Durable Object.
  filter TEXT CHECK (filter IS NULL OR json_valid(filter)),
  -- Its ordering (docs/deliveries.md): 'fifo', one delivery at a time in the order its events were
  -- stored; NULL: none.
  ordering TEXT CHECK (ordering IS NULL OR ordering = 'fifo'),
  -- Why it is disabled: 'gone' (its endpoint answered 410 Gone), 'failing' (disabled by the service
  -- after failing for too long) or 'application' (by the application); and since when. NULL while enabled.
  disabled_reason TEXT CHECK (disabled_reason IS NULL OR disabled_reason IN ('gone', 'failing', 'application')),
  disabled_at TEXT,
  -- Where it delivers (docs/destinations.md): NULL for an HTTP endpoint (its url); else the type and
  -- its fields (JSON), its credentials sealed under "sealed", and url its address (`<type>:...`).
  destination TEXT CHECK (destination IS NULL OR json_valid(destination)),
  -- Its custom headers: {"values", "sensitive", "sealed": the sensitive values, sealed}; NULL: none.
  headers TEXT CHECK (headers IS NULL OR json_valid(headers)),
  -- Which refusal of its destination's API disabled it, when the service disabled it for failing:
  -- 'forbidden' (403) or 'not_found' (404), and the disabled_at of that disabling; shown as
  -- its disabled_reason while disabled_at is still that one.
  disabled_cause TEXT CHECK (disabled_cause IS NULL OR disabled_cause IN ('forbidden', 'not_found')),
  disabled_cause_at TEXT
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
-- Each application's newest change, read with a publish's subscribers (how recent the read is).
CREATE INDEX IF NOT EXISTS webhook_audit_by_app ON webhook_audit (app_id, audit_id);

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

-- Applications as the platform sets them (docs/retention.md): each one's retention, and its
-- erasure.
-- retention_days NULL: DELIVERY_RETENTION_DAYS. An erasure is under way while erasure_requested_at
-- is set and erased_at is not (the Cron Trigger finishes it); erased holds the counts of what
-- every erasure of the application deleted (JSON object of whole numbers).
CREATE TABLE IF NOT EXISTS applications (
  app_id               TEXT PRIMARY KEY CHECK (length(app_id) > 0),
  retention_days       INTEGER CHECK (retention_days IS NULL OR retention_days BETWEEN 1 AND 400),
  updated_at           TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  erasure_requested_at TEXT,
  erasure_request      TEXT CHECK (erasure_request IS NULL OR json_valid(erasure_request)),
  erased_at            TEXT,
  erased               TEXT CHECK (erased IS NULL OR json_valid(erased))
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS applications_erasing ON applications (erasure_requested_at)
  WHERE erasure_requested_at IS NOT NULL AND erased_at IS NULL;

-- Append-only history of the platform's changes to an application: 'retention' (detail: the
-- days before and after) and 'erase' (detail: the counts of what was deleted).
CREATE TABLE IF NOT EXISTS application_audit (
  audit_id   INTEGER PRIMARY KEY AUTOINCREMENT,
  app_id     TEXT    NOT NULL,
  action     TEXT    NOT NULL CHECK (action IN ('retention', 'erase')),
  detail     TEXT    NOT NULL CHECK (json_valid(detail)),
  actor      TEXT    NOT NULL,
  actor_jti  TEXT,
  request_id TEXT    NOT NULL,
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS application_audit_by_app ON application_audit (app_id, action);

-- Events, deliveries, attempts and their counters are not in D1: they live in Durable Objects,
-- one per application and one per endpoint, each with its own SQLite database (docs/storage.md).
