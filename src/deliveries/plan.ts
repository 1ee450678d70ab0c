// The first step of a consumer batch: which of its deliveries are attempted now. Pure.
import { MAX_DELAY_SECONDS } from '../core/delivery-settings';
import { cancelled, type Verdict } from './schedule';
import type { DeliveryChange, DeliveryToAttempt } from './store/dispatch';

/** A message that arrives this early is put back until its attempt is due. */
const EARLY_MS = 2000;

/** What the batch does with its deliveries before any request. */
export interface Plan {
  /**
   * The message that stands for each delivery: the first of its current queue generation. Copies
   * of an older generation (a message the Cron Trigger replaced) and duplicates are acknowledged.
   */
  current: Map<string, string>;
  /** Deliveries to attempt now. */
  due: DeliveryToAttempt[];
  /** The verdicts of deliveries that need no attempt: ended, not due yet, or cancelled. */
  verdicts: Map<string, Verdict>;
  /** The cancelled ones' new state. */
  changes: DeliveryChange[];
}

/**
 * Plans a batch: `rows` are its deliveries as stored, `messages` each delivery's message ids by
 * queue generation. A delivery that ended needs nothing; one whose attempt is not due waits for
 * it; one whose webhook is gone or disabled is cancelled; the others are due.
 */
export function planBatch(
  rows: DeliveryToAttempt[],
  messages: Map<string, { id: string; gen: number }[]>,
  now: number,
): Plan {
  const plan: Plan = { current: new Map(), due: [], verdicts: new Map(), changes: [] };
  for (const row of rows) {
    const message = messages.get(row.delivery_id)?.find((m) => m.gen === row.queue_gen);
    if (message === undefined) continue;
    plan.current.set(row.delivery_id, message.id);
    if (row.status !== 'pending') {
      plan.verdicts.set(row.delivery_id, { ack: true });
    } else if (row.next_attempt_at !== null && Date.parse(row.next_attempt_at) - now > EARLY_MS) {
      const wait = Math.ceil((Date.parse(row.next_attempt_at) - now) / 1000);
      plan.verdicts.set(row.delivery_id, { ack: false, delaySeconds: Math.min(wait, MAX_DELAY_SECONDS) });
    } else if (row.url === null || row.is_enabled !== 1) {
      plan.changes.push(cancelled(row));
      plan.verdicts.set(row.delivery_id, { ack: true });
    } else {
      plan.due.push(row);
    }
  }
  return plan;
}
