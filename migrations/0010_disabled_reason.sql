-- Why a disabled webhook is disabled, and since when: disabled_reason 'gone' (its endpoint answered
-- 410 Gone), 'failing' (the service disabled it after failing for too long) or 'application' (a
-- PUT, or a POST that registered it disabled); disabled_at the time. Both NULL while it is enabled.
-- Expand only: nullable with no default, so the release before keeps working on the upgraded
-- database (it neither reads nor writes the columns; the API shows them only for a disabled webhook).
ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT
  CHECK (disabled_reason IS NULL OR disabled_reason IN ('gone', 'failing', 'application'));
ALTER TABLE webhooks ADD COLUMN disabled_at TEXT;
-- Webhooks disabled already: their reason and time from their latest disable record (the service's
-- own, actor 'system', says which), else registered disabled.
UPDATE webhooks
SET disabled_reason = COALESCE((
    SELECT CASE WHEN a.actor <> 'system' THEN 'application'
      WHEN a.reason LIKE 'the endpoint answered 410%' THEN 'gone' ELSE 'failing' END
    FROM webhook_audit AS a
    WHERE a.webhook_id = webhooks.webhook_id AND a.action = 'disable'
    ORDER BY a.audit_id DESC LIMIT 1), 'application'),
  disabled_at = COALESCE((
    SELECT a.created_at FROM webhook_audit AS a
    WHERE a.webhook_id = webhooks.webhook_id AND a.action = 'disable'
    ORDER BY a.audit_id DESC LIMIT 1), created_at)
WHERE is_enabled = 0;
