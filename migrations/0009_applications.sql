-- Applications as the platform sets them (docs/retention.md): each one's retention, and its
-- erasure. Expand only: new tables, which the release before neither reads nor writes.
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
