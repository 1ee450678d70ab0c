// What a pass's dispatches mean, as the rows to record: every attempt, every delivery's new state,
// the webhook's health, and whether the service disables it. Pure; the sender writes the record.

import type { DeliveryConfig } from '../core/delivery-settings';
import type { DisableCandidate, HealthChange } from '../webhooks/store/health';
import type { Refusal } from './attempt';
import type { Dispatched } from './dispatch';
import { cancelled, succeeded, waiting } from './schedule';
import type { AttemptRecord, DeliveryChange } from './store/sending';

/** However short AUTO_DISABLE_AFTER_HOURS, two failures at least this far apart are needed. */
const MIN_FAILING_HOURS = 12;

/** Hours of nothing but failures after which a webhook is disabled (at its next failed attempt). */
export const failingHours = (config: DeliveryConfig) => Math.max(config.autoDisableHours, MIN_FAILING_HOURS);

/** Everything a pass records: in the endpoint's object (attempts, changes) and in D1 (health, disable). */
export interface PassRecord {
  attempts: AttemptRecord[];
  changes: DeliveryChange[];
  health: HealthChange[];
  disable: DisableCandidate[];
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * What a destination API's refusal means, said when it disables a webhook: its credentials were
 * refused, or what it delivers to does not exist.
 */
const refusalWhy = ({ cause, answer }: Refusal): string =>
  cause === 'forbidden'
    ? `the destination answered ${answer}: access denied (its credentials or their permissions)`
    : `the destination answered ${answer}: it does not exist`;

/** The record of a pass's dispatches at `now`. */
export function recordOf(dispatched: Dispatched[], config: DeliveryConfig, now: number): PassRecord {
  const record: PassRecord = { attempts: [], changes: [], health: [], disable: [] };
  const health = new Map<string, HealthChange>();
  const disable = new Map<string, DisableCandidate>();
  for (const done of dispatched) {
    // Held for its slot: untouched. Unsigned: it waits a while. The webhook gone: cancelled.
    if (done.kind !== 'attempted') {
      if (done.kind !== 'held')
        record.changes.push(done.kind === 'wait' ? waiting(done.row, now) : cancelled(done.row));
      continue;
    }
    const { row, at, result, next: change } = done;
    record.changes.push(change);
    record.attempts.push({
      delivery_id: row.delivery_id,
      attempt: change.attempts,
      attempted_at: iso(at),
      status: result.status,
      error: result.error,
      duration_ms: result.durationMs,
      body: result.body,
    });
    const ok = succeeded(result);
    // A destination API that throttles is busy, not broken: retried, but no failure toward auto-disable.
    if (!ok && result.throttled === true) continue;
    // One success in the pass clears the webhook's failure clock; otherwise its first failure starts it.
    if (ok) health.set(row.webhook_id, { webhook_id: row.webhook_id, ok: true, at: iso(at) });
    else if (!health.has(row.webhook_id))
      health.set(row.webhook_id, { webhook_id: row.webhook_id, ok: false, at: iso(at) });
    if (!ok) {
      // One candidate per webhook (one audit record): 410 if any attempt of the pass got one.
      const hours = failingHours(config);
      const before = disable.get(row.webhook_id);
      // An API's refusal names why: this attempt's, else the one an earlier attempt of the pass met.
      const { refused } = result;
      const named =
        refused === undefined
          ? { cause: before?.cause, why: before?.why }
          : { cause: refused.cause, why: refusalWhy(refused) };
      disable.set(row.webhook_id, {
        webhook_id: row.webhook_id,
        gone: result.status === 410 || before?.gone === true,
        cutoff: iso(at - hours * 3_600_000),
        request_id: before?.request_id ?? `delivery:${row.delivery_id}`,
        ...(named.cause === undefined ? {} : named),
      });
    }
  }
  record.health = [...health.values()];
  record.disable = [...disable.values()];
  return record;
}
