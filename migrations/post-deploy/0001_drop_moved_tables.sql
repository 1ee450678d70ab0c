-- After the release that retires the move (the first without any code that reads these tables):
-- D1's events, deliveries, delivery_attempts and delivery_stats, with the move's columns
-- (deliveries.move_claimed_at, move_due_at) and every index and trigger on them, are dropped. Since
-- the release before (6569f6d) their rows live in the Durable Objects, and that release's Cron
-- Trigger emptied them; `npm run deploy` refuses to start while they hold a row.
--
-- A post-deploy migration: applied only once this release's code is live, never while the
-- release before may still be serving (docs/deploying.md). The guard below makes the file fail as
-- a whole, dropping nothing, should any of them hold a row after all ("CHECK constraint failed:
-- moved = 1"): deploy the release before and let its Cron Trigger finish the move first.
CREATE TABLE move_over_check (moved INTEGER NOT NULL CHECK (moved = 1));
INSERT INTO move_over_check (moved)
SELECT NOT EXISTS (SELECT 1 FROM events) AND NOT EXISTS (SELECT 1 FROM deliveries)
  AND NOT EXISTS (SELECT 1 FROM delivery_attempts) AND NOT EXISTS (SELECT 1 FROM delivery_stats);
DROP TABLE move_over_check;
DROP TABLE delivery_attempts;
DROP TABLE delivery_stats;
DROP TABLE deliveries;
DROP TABLE events;
