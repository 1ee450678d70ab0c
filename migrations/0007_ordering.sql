-- Ordered delivery: a webhook's ordering, 'fifo' (its deliveries attempted one at a time, in the
-- order their events were stored; docs/deliveries.md) or NULL (no order, up to six at once).
-- Expand only: nullable with no default, so the release before keeps working on the upgraded
-- database (it neither reads nor writes the column).
ALTER TABLE webhooks ADD COLUMN ordering TEXT CHECK (ordering IS NULL OR ordering = 'fifo');
