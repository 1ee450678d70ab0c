import { log } from '../core/log';

/** The body of a deliveries queue message: the delivery and its queue generation. */
export interface DeliveryMessage {
  delivery_id: string;
  /** The delivery's `queue_gen` when it was queued; absent means 0. */
  gen?: number;
}

/** A delivery to queue: its id, its current queue generation, and how long its message waits. */
export interface QueuedDelivery {
  id: string;
  gen: number;
  delaySeconds?: number;
}

/** Messages per sendBatch call (the Queues limit). */
const SEND_BATCH_MAX = 100;

/**
 * Queues deliveries for their next attempt. A failure is logged, not thrown: the deliveries are
 * in D1, and the Cron Trigger queues overdue ones again. Returns whether every message was sent.
 */
export async function queueDeliveries(env: CloudflareBindings, deliveries: QueuedDelivery[]): Promise<boolean> {
  try {
    for (let i = 0; i < deliveries.length; i += SEND_BATCH_MAX) {
      await env.DELIVERIES.sendBatch(
        deliveries.slice(i, i + SEND_BATCH_MAX).map(({ id, gen, delaySeconds }) => ({
          body: (gen === 0 ? { delivery_id: id } : { delivery_id: id, gen }) satisfies DeliveryMessage,
          contentType: 'json' as const,
          ...(delaySeconds === undefined ? {} : { delaySeconds }),
        })),
      );
    }
    return true;
  } catch (err) {
    log(
      'error',
      { msg: 'could not queue deliveries; the Cron Trigger queues them again', deliveries: deliveries.length },
      err,
    );
    return false;
  }
}

/** Deliveries queued for the first time (generation 0). */
export const firstQueued = (ids: string[]): QueuedDelivery[] => ids.map((id) => ({ id, gen: 0 }));
