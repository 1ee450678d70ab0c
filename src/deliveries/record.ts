// The third step of a consumer batch: what its dispatches mean, as the rows to record and each
// message's verdict. Pure; the orchestrator writes the record and settles the messages.

import type { DeliveryConfig } from '../core/delivery-settings';
import type { DisableCandidate, HealthChange } from '../webhooks/store/health';
import type { Dispatched } from './dispatch';
import type { Plan } from './plan';
import { succeeded, type Verdict, waiting } from './schedule';
import type { AttemptRecord, DeliveryChange } from './store/dispatch';
import type { Held } from './throttle';

/** However short AUTO_DISABLE_AFTER_HOURS, two failures at least this far apart are needed. */
const MIN_FAILING_HOURS = 12;

/** Everything a batch records (one D1 batch), and each delivery's verdict. */
export interface BatchRecord {
  attempts: AttemptRecord[];
  changes: DeliveryChange[];
  health: HealthChange[];
  disable: DisableCandidate[];
  verdicts: Map<string, Verdict>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The record of a batch: the plan's cancellations, the deliveries its endpoints' rates held back
 * (no attempt), then each dispatch's attempt and new state.
 */
export function recordOf(
  plan: Plan,
  held: Held[],
  dispatched: Dispatched[],
  config: DeliveryConfig,
  now: number,
): BatchRecord {
  const record: BatchRecord = {
    attempts: [],
    changes: [...plan.changes],
    health: [],
    disable: [],
    verdicts: new Map(plan.verdicts),
  };
  const health = new Map<string, HealthChange>();
  const disable = new Map<string, DisableCandidate>();
  for (const { row, delaySeconds } of held) {
    const { change } = waiting(row, now, delaySeconds);
    record.changes.push(change);
    record.verdicts.set(row.delivery_id, { ack: false, delaySeconds, fresh: true });
  }
  for (const done of dispatched) {
    const { row } = done;
    if (done.kind === 'wait') {
      const { change, verdict } = waiting(row, now);
      record.changes.push(change);
      record.verdicts.set(row.delivery_id, verdict);
      continue;
    }
    const { at, result } = done;
    const { change, verdict } = done.next;
    record.changes.push(change);
    record.verdicts.set(row.delivery_id, verdict);
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
    // One success in the batch clears the webhook's failure clock; otherwise its first failure starts it.
    if (ok) health.set(row.webhook_id, { webhook_id: row.webhook_id, ok: true, at: iso(at) });
    else if (!health.has(row.webhook_id))
      health.set(row.webhook_id, { webhook_id: row.webhook_id, ok: false, at: iso(at) });
    if (!ok) {
      // One candidate per webhook (one audit record): 410 if any attempt of the batch got one.
      const hours = Math.max(config.autoDisableHours, MIN_FAILING_HOURS);
      const before = disable.get(row.webhook_id);
      disable.set(row.webhook_id, {
        webhook_id: row.webhook_id,
        gone: result.status === 410 || before?.gone === true,
        cutoff: iso(at - hours * 3_600_000),
        request_id: before?.request_id ?? `queue:${plan.current.get(row.delivery_id) ?? ''}`,
      });
    }
  }
  record.health = [...health.values()];
  record.disable = [...disable.values()];
  return record;
}
