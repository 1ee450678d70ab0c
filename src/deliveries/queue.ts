import { log } from '../http/log';
import type { DeliveryMessage } from './consumer';

/** Messages per sendBatch call (the Queues limit). */
const SEND_BATCH_MAX = 100;

/**
 * Queues deliveries for their first attempt (or again, from the Cron Trigger). A failure is
 * logged, not thrown: the deliveries are in D1, and the Cron Trigger queues overdue ones again.
 * Returns whether every message was sent.
 */
export async function queueDeliveries(env: CloudflareBindings, deliveryIds: string[]): Promise<boolean> {
  try {
    for (let i = 0; i < deliveryIds.length; i += SEND_BATCH_MAX) {
      await env.DELIVERIES.sendBatch(
        deliveryIds
          .slice(i, i + SEND_BATCH_MAX)
          .map((id) => ({ body: { delivery_id: id } satisfies DeliveryMessage, contentType: 'json' as const })),
      );
    }
    return true;
  } catch (err) {
    log(
      'error',
      { msg: 'could not queue deliveries; the Cron Trigger queues them again', deliveries: deliveryIds.length },
      err,
    );
    return false;
  }
}
