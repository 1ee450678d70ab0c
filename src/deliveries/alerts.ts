// What a sending pass tells the application about its endpoint, as operational events:
// endpoint.disabled (the pass's 410 or failures disabled it), endpoint.failing (over the last hour
// at least MIN_ATTEMPTS attempts, and 50 %, then 90 %, of them failed; a threshold fires again only
// after a success came between and 24 hours passed), endpoint.recovered (the first success after
// endpoint.failing) and delivery.exhausted (a delivery ended failed after its last scheduled attempt;
// not for a 410, which is endpoint.disabled, nor for a delivery of an operational event, so that
// events about events cannot chain). The window is kept by minute in the object's own storage.
import { isOperationalType } from '../core/event-types';
import { emitOperational, type OperationalEvent } from '../events/operational';
import { shownUrl } from '../webhooks/destination';
import type { DisabledCause } from '../webhooks/store/health';
import type { SendingRow } from '../webhooks/store/reads';
import type { Dispatched } from './dispatch';
import { succeeded } from './schedule';
import { type AlertState, endedDeliveries, type MinuteCounts, readAlerts, writeAlerts } from './store/alerts';

/** Attempts the last hour must have before a failure rate means anything. */
export const MIN_ATTEMPTS = 10;
/** The failure thresholds, highest first. */
export const THRESHOLDS = [0.9, 0.5];
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const REFIRE_MS = 24 * HOUR_MS;

const iso = (ms: number) => new Date(ms).toISOString();

/** What endpoint.failing says, before the webhook's id and URL. */
export interface FailingCounts {
  failure_rate: number;
  failed: number;
  attempts: number;
  since: string;
}

/**
 * The alert state after attempts (`outcomes`, their times and whether each succeeded) at `now`:
 * the new state, the endpoint.failing counts to send (null: none), and whether it recovered. Pure.
 */
export function alertsAfter(
  state: AlertState,
  outcomes: { at: number; ok: boolean }[],
  now: number,
): { state: AlertState; failing: FailingCounts | null; recovered: boolean } {
  const byMinute = new Map<number, MinuteCounts>(state.window.map((m) => [m[0], [...m] as MinuteCounts]));
  for (const { at, ok } of outcomes) {
    const minute = Math.floor(at / MINUTE_MS) * MINUTE_MS;
    const counts = byMinute.get(minute) ?? [minute, 0, 0, null];
    counts[1]++;
    if (!ok) {
      counts[2]++;
      counts[3] = counts[3] === null ? at : Math.min(counts[3], at);
    }
    byMinute.set(minute, counts);
  }
  const start = Math.floor((now - HOUR_MS) / MINUTE_MS) * MINUTE_MS;
  const window = [...byMinute.values()].filter((m) => m[0] >= start).sort((a, b) => a[0] - b[0]);
  const fired = { ...state.fired };
  let failing = state.failing;
  let recovered = false;
  if (outcomes.some((o) => o.ok)) {
    for (const key of Object.keys(fired)) fired[key] = { ...(fired[key] as { at: number }), success: true };
    recovered = failing;
    failing = false;
  }
  const attempts = window.reduce((sum, m) => sum + m[1], 0);
  const failed = window.reduce((sum, m) => sum + m[2], 0);
  let counts: FailingCounts | null = null;
  const threshold = attempts >= MIN_ATTEMPTS ? THRESHOLDS.find((t) => failed / attempts >= t) : undefined;
  if (threshold !== undefined) {
    const last = fired[String(threshold)];
    if (last === undefined || (last.success && now - last.at >= REFIRE_MS)) {
      const firstFailure = Math.min(...window.filter((m) => m[3] !== null).map((m) => m[3] as number));
      counts = { failure_rate: failed / attempts, failed, attempts, since: iso(firstFailure) };
      // This threshold and those below it fired now: 90 % at once is not also told as 50 %.
      for (const t of THRESHOLDS) if (t <= threshold) fired[String(t)] = { at: now, success: false };
      failing = true;
    }
  }
  return { state: { window, fired, failing }, failing: counts, recovered };
}

/**
 * The webhook's disabling by this pass, if it did: its 410 ('gone'), or its failures ('failing', or
 * the destination API's refusal that named why, with `why` in words).
 */
export type DisabledBy = { reason: 'gone' | 'failing' | DisabledCause; why?: string } | null;

/**
 * After a pass's record: updates the endpoint's alert state and makes the operational events the
 * pass caused, in its application's stream (and the platform's endpoint's).
 */
export async function tellAfterPass(
  storage: DurableObjectStorage,
  env: CloudflareBindings,
  webhookId: string,
  webhook: SendingRow,
  dispatched: Dispatched[],
  disabledBy: DisabledBy,
): Promise<void> {
  const attempted = dispatched.flatMap((d) => (d.kind === 'attempted' ? [d] : []));
  if (attempted.length === 0 && disabledBy === null) return;
  const { app_id: appId } = webhook;
  // The address it sends to (a destination's API, not its stored address).
  const url = shownUrl(webhook.url, webhook.destination);
  const now = Date.now();
  const alerts = alertsAfter(
    readAlerts(storage.sql),
    attempted.map((d) => ({ at: d.at, ok: succeeded(d.result) })),
    now,
  );
  writeAlerts(storage.sql, alerts.state);

  const events: OperationalEvent[] = [];
  const about = (type: OperationalEvent['type'], data: Record<string, unknown>) =>
    events.push({ appId, webhookId, type, data: { webhook_id: webhookId, ...data } });
  const exhausted = attempted.filter((d) => d.next.status === 'failed' && d.result.status !== 410);
  for (const ended of endedDeliveries(
    storage.sql,
    exhausted.map((d) => d.row.delivery_id),
  )) {
    const d = exhausted.find((e) => e.row.delivery_id === ended.delivery_id);
    if (d === undefined || isOperationalType(ended.type)) continue;
    about('delivery.exhausted', {
      delivery_id: ended.delivery_id,
      event_id: ended.event_id,
      type: ended.type,
      attempts: d.next.attempts,
      last_status: d.result.status,
      last_error: d.result.error,
    });
  }
  if (alerts.recovered) about('endpoint.recovered', { url });
  if (alerts.failing !== null) about('endpoint.failing', { url, ...alerts.failing });
  if (disabledBy !== null) about('endpoint.disabled', { url, ...disabledBy });
  if (events.length > 0) await emitOperational(env, events);
}
