// What an attempt means for its delivery: the retry schedule (DELIVERY_RETRY_SCHEDULE), the
// receiver's Retry-After, and when a delivery ends. Pure functions.

import { type DeliveryConfig, MAX_DELAY_SECONDS } from '../core/delivery-settings';
import type { AttemptResult } from './attempt';
import type { DeliveryChange, DueDelivery } from './store/sending';

/** How long deliveries wait when they cannot be attempted now (configuration, secrets, the unexpected). */
export const WAIT_SECONDS = 60;

const iso = (ms: number) => new Date(ms).toISOString();

/** Whether an attempt succeeded: a 2xx reply that did not say the message was refused. */
export const succeeded = (result: AttemptResult) =>
  result.status !== null && result.status >= 200 && result.status < 300 && result.error === null;

/**
 * The delivery's state after an attempt made at `at`: it ended (succeeded, answered 410 Gone, or
 * had its last scheduled attempt), or it waits for its next step of the schedule (longer when the
 * receiver asked, up to the longest delay a schedule may have).
 */
export function afterAttempt(
  row: DueDelivery,
  result: AttemptResult,
  at: number,
  config: DeliveryConfig,
): DeliveryChange {
  const attempts = row.attempts + 1;
  const base = { delivery_id: row.delivery_id, expected: row.attempts, attempts };
  const record = { at: iso(at), status: result.status, error: result.error };
  const ok = succeeded(result);
  const step = attempts - row.schedule_start - 1;
  const scheduled = config.schedule[step];
  if (ok || result.status === 410 || scheduled === undefined) {
    return { ...base, status: ok ? 'succeeded' : 'failed', next_attempt_at: null, attempt: record };
  }
  const delay =
    result.retryAfter === null ? scheduled : Math.max(scheduled, Math.min(result.retryAfter, MAX_DELAY_SECONDS));
  return { ...base, status: 'pending', next_attempt_at: iso(at + delay * 1000), attempt: record };
}

/** No attempt now: the delivery stays as it is and waits `seconds` (WAIT_SECONDS unless said). */
export function waiting(row: DueDelivery, now: number, seconds = WAIT_SECONDS): DeliveryChange {
  return {
    delivery_id: row.delivery_id,
    expected: row.attempts,
    status: 'pending',
    attempts: row.attempts,
    next_attempt_at: iso(now + seconds * 1000),
    attempt: null,
  };
}

/** The webhook is gone or disabled: the delivery ends as cancelled, without a request. */
export function cancelled(row: DueDelivery): DeliveryChange {
  return {
    delivery_id: row.delivery_id,
    expected: row.attempts,
    status: 'cancelled',
    attempts: row.attempts,
    next_attempt_at: null,
    attempt: null,
  };
}
