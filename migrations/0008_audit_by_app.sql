-- Each application's newest webhook change, read with every publish's subscribers (how recent the
-- read is: a publish that read before a change its application's object was told of reads again).
-- Expand only: an index, which the release before neither needs nor minds.
CREATE INDEX IF NOT EXISTS webhook_audit_by_app ON webhook_audit (app_id, audit_id);
