// One sending pass of an endpoint's object, in four steps: prepare (its due deliveries from its
// own storage, the webhook from D1, the key that opens its signing secrets), admit by rate (the
// host's budget from the application's object; then, as each attempt starts, the webhook as it
// stands and the endpoint's own rate), dispatch (six requests at once), and record (attempts and
// states in the object, the webhook's health in D1). Only this endpoint's object waits on its
// requests, so a slow endpoint holds back no other. A FIFO webhook's pass takes only its head, the
// oldest pending delivery, and only when it is due: one at a time, in the order of their ids.

import type { DeliveryConfig } from '../core/delivery-settings';
import { log } from '../core/log';
import { forgetStale } from '../core/send-rate';
import { retryD1 } from '../platform/d1';
import { healthStatements } from '../webhooks/store/health';
import type { SendingRow } from '../webhooks/store/reads';
import { type DisabledBy, tellAfterPass } from './alerts';
import { dispatchAll, logSucceeded, prepareSigning } from './dispatch';
import { type EndpointState, hostSlots, knownWebhook, openGate, sendable } from './gate';
import { type PassRecord, recordOf } from './record';
import { cancelled, waiting } from './schedule';
import {
  type AttemptRecord,
  type DeliveryChange,
  type DueDelivery,
  dueDeliveries,
  headDelivery,
  nextDue,
  recordDeliveries,
} from './store/sending';

export type { EndpointState, HostTold, Notices, Ordering } from './gate';

/** Due deliveries one pass looks at. */
export const PASS_DELIVERIES = 50;
/** How long deliveries wait when D1 cannot tell where to send them. */
const STORAGE_WAIT_MS = 10_000;
/** How long they wait when the host's budget cannot be asked for. */
const HOST_WAIT_MS = 1_000;

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * What a pass sends with, checked by its caller (its object waits while either is invalid): the
 * delivery settings, and the origins exempt from the URL rules (WEBHOOK_URL_ALLOWED_ORIGINS).
 */
export interface SendSettings {
  config: DeliveryConfig;
  origins: ReadonlySet<string>;
}

/**
 * One pass over the endpoint's due deliveries. Returns when the object should send again (ms;
 * null: nothing is pending): at once when more are due, at a held delivery's slot, or when the
 * next one is due.
 */
export async function sendDue(
  endpoint: EndpointState,
  env: CloudflareBindings,
  { config, origins }: SendSettings,
  fetcher: typeof fetch,
): Promise<number | null> {
  const { storage, webhookId, ordering } = endpoint;
  const now = Date.now();

  // Prepare: what is due, and the webhook as D1 holds it now.
  let due = dueDeliveries(storage.sql, iso(now), PASS_DELIVERIES);
  if (due.length === 0) return nextDue(storage.sql, ordering.fifo);
  let webhook: SendingRow | null;
  try {
    webhook = await knownWebhook(endpoint, env, now);
  } catch (err) {
    log('error', { msg: 'could not read the webhook; its deliveries wait', webhook_id: webhookId }, err);
    return now + STORAGE_WAIT_MS;
  }
  // A webhook deleted or disabled since: its deliveries end, cancelled, without a request.
  if (!sendable(webhook)) {
    recordAndTell(endpoint, [], due.map(cancelled));
    return nextDue(storage.sql, ordering.fifo);
  }
  // FIFO: its head only, when it is due (ended deliveries let the next one be the head).
  ordering.fifo = webhook.ordering === 'fifo';
  if (ordering.fifo) {
    due = fifoDue(storage.sql, now);
    if (due.length === 0) return nextDue(storage.sql, true);
  }
  // Cannot sign: the deliveries wait, neither attempted nor counted against any rate.
  const secretKeys = await prepareSigning(env, webhookId, webhook);
  if (secretKeys === null) {
    recordAndTell(
      endpoint,
      [],
      due.map((d) => waiting(d, now)),
    );
    return nextDue(storage.sql, ordering.fifo);
  }

  // Admit by rate: the host's budget for the pass (one call); each attempt is then admitted as it
  // starts, by the webhook as it stands and the endpoint's own rate (see gate.ts).
  // A pass asks for no more of the host than its own rate could start now.
  const rate = Math.min(config.endpointRate, webhook.rate_limit ?? config.endpointRate);
  const host = await hostSlots(endpoint, env, webhook, Math.min(due.length, rate), config.endpointRate);
  if (host === null) return now + HOST_WAIT_MS;
  forgetStale(endpoint.schedule, now);
  const gate = openGate(endpoint, env, config, webhook, host);

  // Dispatch: six at once; what is not admitted waits untouched for its slot.
  const dispatched = await dispatchAll(due, { secretKeys, origins, config, fetcher, gate, webhookId });

  logSucceeded(webhookId, dispatched);
  // Record: attempts and states here, the webhook's health in D1.
  const record = recordOf(dispatched, config, Date.now());
  recordAndTell(endpoint, record.attempts, record.changes);
  const healthChanges = record.health.some((h) => h.ok === (webhook.failing_since !== null));
  const disabledBy = await recordHealth(env, webhookId, webhook.failing_since, record);
  // Its health written to D1 (failing since, healthy again, disabled): the next pass reads it again.
  if ((healthChanges || record.disable.length > 0) && endpoint.kept !== undefined) endpoint.kept.webhook = undefined;
  // The service disabled the webhook: the next pass reads it again (and cancels what is left).
  if (record.disable.length > 0) endpoint.notices.changes++;
  // Operational events: what this pass did to the endpoint, told in its application's stream.
  await tellAfterPass(storage, env, webhookId, webhook, dispatched, disabledBy);
  return gate.heldUntil() ?? nextDue(storage.sql, ordering.fifo);
}

/** Records attempts and new states in the object; the endpoint's watchers hear which deliveries changed. */
function recordAndTell(endpoint: EndpointState, attempts: AttemptRecord[], changes: DeliveryChange[]): void {
  recordDeliveries(endpoint.storage, attempts, changes);
  endpoint.recorded?.(changes.map((c) => c.delivery_id));
}

/** A FIFO endpoint's due deliveries: its head when it is due, else none. */
function fifoDue(sql: SqlStorage, now: number): DueDelivery[] {
  const head = headDelivery(sql);
  return head?.next_attempt_at != null && Date.parse(head.next_attempt_at) <= now ? [head] : [];
}

/**
 * Writes the webhook's health to D1 only when it changes as the pass read it: healthy and failing
 * now, failing and healthy now, or due to be disabled (the statements check again). Returns why
 * these statements disabled it (null: they did not).
 */
async function recordHealth(
  env: CloudflareBindings,
  webhookId: string,
  since: string | null,
  record: PassRecord,
): Promise<DisabledBy> {
  const health = record.health.filter((h) => h.ok === (since !== null));
  const disable = record.disable.filter((d) => d.gone || (since !== null && since <= d.cutoff));
  record.disable = disable;
  if (health.length === 0 && disable.length === 0) return null;
  try {
    const results = await retryD1(() => env.DB.batch(healthStatements(env.DB, health, disable)));
    // The last statement disables (one candidate: this endpoint's webhook).
    const [candidate] = disable;
    if (candidate === undefined || (results.at(-1)?.meta.changes ?? 0) === 0) return null;
    if (candidate.gone) return { reason: 'gone' };
    return candidate.cause === undefined ? { reason: 'failing' } : { reason: candidate.cause, why: candidate.why };
  } catch (err) {
    // The next pass's attempts say it again.
    log('error', { msg: "could not record the webhook's health", webhook_id: webhookId }, err);
    return null;
  }
}
