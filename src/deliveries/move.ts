// The move from D1 to the Durable Objects, driven by the Cron Trigger: a deployment of the release
// before kept events, deliveries and attempts in D1. Each run moves the deliveries it claimed in an
// earlier run (once no attempt the release before started can still be running), then the events
// no delivery in D1 refers to any more, then claims what is left. Every step can be repeated: the
// objects keep what they have, D1 rows go only once the objects hold them.

import { groupBy } from '../core/batches';
import type { DeliveryConfig } from '../core/delivery-settings';
import { retryD1 } from '../platform/d1';
import {
  type ClaimedDelivery,
  claimDeliveries,
  claimedDeliveries,
  deleteMoved,
  deleteMovedEvents,
  eventsToMove,
} from './store/move';

/** Deliveries (and events) moved per run at most; claims per run at most. */
const MOVE_ROWS = 2000;
const CLAIM_ROWS = 5000;

/**
 * How long after its claim a delivery moves: a consumer batch of the release before that loaded it
 * just before (ten deliveries, six requests at a time: two timeouts at most) has recorded by then.
 */
export const moveAfterMs = (config: DeliveryConfig) => (2 * config.timeoutSeconds + 30) * 1000;

/** One run of the move. Returns how many rows it moved or claimed. */
export async function moveFromD1(env: CloudflareBindings, config: DeliveryConfig): Promise<number> {
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  const { deliveries, attempts } = await retryD1(() =>
    claimedDeliveries(env.DB, iso(now - moveAfterMs(config)), iso(now), MOVE_ROWS),
  );
  if (deliveries.length > 0) {
    const attemptsOf = groupBy(attempts, (a) => a.delivery_id);
    await Promise.all([
      ...[...groupBy(deliveries, (d) => d.webhook_id)].map(([webhookId, rows]) =>
        env.ENDPOINTS.getByName(webhookId).moveIn(
          webhookId,
          rows.map(movedRow),
          rows.flatMap((r) => attemptsOf.get(r.delivery_id) ?? []),
        ),
      ),
      ...[...groupBy(deliveries, (d) => d.app_id)].map(([appId, rows]) =>
        env.APPLICATIONS.getByName(appId).moveIn(
          [],
          rows.map((r) => ({ delivery_id: r.delivery_id, webhook_id: r.webhook_id, created_at: r.created_at })),
        ),
      ),
    ]);
    await retryD1(() =>
      deleteMoved(
        env.DB,
        deliveries.map((d) => d.delivery_id),
      ),
    );
  }
  const events = await retryD1(() => eventsToMove(env.DB, MOVE_ROWS, true));
  if (events.length > 0) {
    await Promise.all(
      [...groupBy(events, (e) => e.app_id)].map(([appId, rows]) =>
        env.APPLICATIONS.getByName(appId).moveIn(
          rows.map(({ event_id, source_key, created_at }) => ({ event_id, source_key, created_at })),
          [],
        ),
      ),
    );
    await retryD1(() =>
      deleteMovedEvents(
        env.DB,
        events.map((e) => e.event_id),
      ),
    );
  }
  const claimed = await retryD1(() => claimDeliveries(env.DB, iso(now), CLAIM_ROWS));
  return deliveries.length + events.length + claimed;
}

/** A claimed delivery as its endpoint's object stores it. */
function movedRow(d: ClaimedDelivery) {
  const { webhook_id: _webhook, source_key: _key, ...row } = d;
  return row;
}
