-- Release 5: events, deliveries and attempts move to Durable Objects (one per application, one per
-- endpoint). D1 keeps the control plane: webhooks, their audit records, Idempotency-Keys.
--
-- Expand only: the release before this one keeps working on the upgraded database while the
-- deploy is under way, and the tables it writes stay. The new release's Cron Trigger moves their
-- rows to the objects in two steps: it claims a delivery (move_claimed_at), taking it out of the
-- old release's hands (its queue generation goes up, so its queued message is stale, and its next
-- attempt time moves to move_due_at, so the old Cron Trigger does not queue it again), then moves
-- it once no attempt that started before the claim can still be running. The tables are empty
-- after that; a later release drops them.
ALTER TABLE deliveries ADD COLUMN move_claimed_at TEXT;
ALTER TABLE deliveries ADD COLUMN move_due_at TEXT;
CREATE INDEX deliveries_claimed ON deliveries (move_claimed_at) WHERE move_claimed_at IS NOT NULL;
