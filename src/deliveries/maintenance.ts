// What the Cron Trigger does for deliveries: nothing lost (overdue deliveries queued again), and
// nothing kept past the retention.
import { inBatches } from '../core/batches';
import type { DeliveryConfig } from '../core/delivery-settings';
import { queueDeliveries } from '../platform/queues';
import { purgeOldDeliveries, takeOverdue } from './store/maintenance';

/** Deliveries queued again per statement (one sendBatch of 100 messages). */
const REQUEUE_BATCH = 100;
const REQUEUE_MAX_BATCHES = 50;

/**
 * Queues again every pending delivery whose next attempt is more than
 * DELIVERY_REQUEUE_AFTER_SECONDS overdue: its message was lost, or the Worker died mid-batch.
 * A delivery that ended is never queued again. Returns how many.
 */
export function requeueOverdue(env: CloudflareBindings, config: DeliveryConfig): Promise<number> {
  return inBatches(
    async (limit) => {
      const now = Date.now();
      const overdueSince = new Date(now - config.requeueAfterSeconds * 1000).toISOString();
      const ids = await takeOverdue(env.DB, overdueSince, new Date(now).toISOString(), limit);
      if (ids.length > 0 && !(await queueDeliveries(env, ids))) return 0;
      return ids.length;
    },
    REQUEUE_BATCH,
    REQUEUE_MAX_BATCHES,
  );
}

/** Deletes events, deliveries and attempts older than DELIVERY_RETENTION_DAYS. Returns how many rows. */
export function purgeExpiredDeliveries(env: CloudflareBindings, config: DeliveryConfig): Promise<number> {
  const before = new Date(Date.now() - config.retentionDays * 86_400_000).toISOString();
  return inBatches((limit) => purgeOldDeliveries(env.DB, before, limit));
}
