-- Which refusal of a destination's API disabled a webhook the service disabled for failing:
-- disabled_cause 'forbidden' (it answered 403: its credentials or their permissions) or
-- 'not_found' (404: the queue, bus or topic does not exist), and disabled_cause_at the disabled_at
-- of the disabling it explains. A reply shows the cause as the webhook's disabled_reason in place of
-- 'failing' only while disabled_at is still that one. Columns of their own because
-- disabled_reason's CHECK names three values, and changing a CHECK rebuilds the table.
-- Expand only: nullable with no default, and the release before neither reads nor writes them.
-- When it enables a webhook and later disables it again, disabled_at moves on: the cause left
-- behind no longer applies, and is not shown.
ALTER TABLE webhooks ADD COLUMN disabled_cause TEXT
  CHECK (disabled_cause IS NULL OR disabled_cause IN ('forbidden', 'not_found'));
ALTER TABLE webhooks ADD COLUMN disabled_cause_at TEXT;
-- Webhooks the release before disabled after an API's 403 or 404: named from their disable
-- record, which said why.
UPDATE webhooks
SET disabled_cause = (
    SELECT CASE WHEN a.reason LIKE '%answered 403 Forbidden%' THEN 'forbidden'
      WHEN a.reason LIKE '%answered 404 Not Found%' THEN 'not_found' END
    FROM webhook_audit AS a
    WHERE a.webhook_id = webhooks.webhook_id AND a.action = 'disable'
    ORDER BY a.audit_id DESC LIMIT 1),
  disabled_cause_at = disabled_at
WHERE is_enabled = 0 AND disabled_reason = 'failing' AND destination IS NOT NULL;
