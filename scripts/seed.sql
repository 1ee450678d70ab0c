-- Demo webhooks for a local run. Seeds only a database that never had a webhook (both tables
-- empty), so running it again never re-creates deleted ones.
-- The disabled ones were disabled by hand (disabled_reason 'application'), when they were seeded.
INSERT INTO webhooks (app_id, url, is_enabled, disabled_reason, disabled_at)
SELECT app_id, url, is_enabled, CASE WHEN is_enabled = 0 THEN 'application' END,
  CASE WHEN is_enabled = 0 THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END FROM (
            SELECT 1 AS n, 'demo-app-1' AS app_id, 'https://demo-app-1.example/hooks/transfers' AS url, 1 AS is_enabled
  UNION ALL SELECT 2, 'demo-app-1', 'https://demo-app-1.example/hooks/mints', 1
  UNION ALL SELECT 3, 'demo-app-1', 'https://demo-app-1.example/hooks/burns', 0
  UNION ALL SELECT 4, 'demo-app-2', 'https://demo-app-2.example/webhook', 1
  UNION ALL SELECT 5, 'demo-app-2', 'https://demo-app-2.example/webhook-legacy', 0
  ORDER BY n
)
WHERE NOT EXISTS (SELECT 1 FROM webhooks) AND NOT EXISTS (SELECT 1 FROM webhook_audit);
