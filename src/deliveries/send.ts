// One sending pass of an endpoint's object: its due deliveries read from its own storage, the
// webhook read from D1, as many attempts as the endpoint's rate allows sent (six at once), and
// what happened recorded: attempts and states in the object, the webhook's health in D1. Only this
// endpoint's object waits on its requests, so a slow endpoint holds back no other.

import type { DeliveryConfig } from '../core/delivery-settings';
import { log } from '../core/log';
import { admit, forgetStale, type SendSchedule } from '../core/send-rate';
import { retryD1 } from '../platform/d1';
import { healthStatements } from '../webhooks/store/health';
import { type SendingRow, sendingRow } from '../webhooks/store/reads';
import { dispatchAll, prepareSigning } from './dispatch';
import { recordOf } from './record';
import { cancelled } from './schedule';
import { type DeliveryToAttempt, dueDeliveries, nextDue, recordDeliveries } from './store/sending';

/** Due deliveries one pass looks at. */
export const PASS_DELIVERIES = 50;
/** How long deliveries wait when D1 cannot tell where to send them. */
const STORAGE_WAIT_MS = 10_000;

const iso = (ms: number) => new Date(ms).toISOString();

/** The endpoint an object sends to: its webhook, its storage, its send rate's schedule. */
export interface EndpointState {
  webhookId: string;
  storage: DurableObjectStorage;
  schedule: SendSchedule;
}

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
  const { storage, webhookId } = endpoint;
  const now = Date.now();
  const due = dueDeliveries(storage.sql, iso(now), PASS_DELIVERIES);
  if (due.length === 0) return nextDue(storage.sql);
  let webhook: SendingRow | null;
  try {
    webhook = await retryD1(() => sendingRow(env.DB, webhookId));
  } catch (err) {
    log('error', { msg: 'could not read the webhook; its deliveries wait', webhook_id: webhookId }, err);
    return now + STORAGE_WAIT_MS;
  }
  // A webhook deleted or disabled since: its deliveries end, cancelled, without a request.
  if (webhook === null || webhook.is_enabled !== 1) {
    recordDeliveries(storage, [], due.map(cancelled));
    return nextDue(storage.sql);
  }
  const { url, secret, previous_secret, previous_secret_until } = webhook;
  const rows: DeliveryToAttempt[] = due.map((d) => ({
    ...d,
    webhook_id: webhookId,
    url,
    secret,
    previous_secret,
    previous_secret_until,
  }));
  // Signing first: deliveries that cannot be signed now wait without using up the endpoint's rate.
  const aes = await prepareSigning(env, rows);
  // Each endpoint's rate: the service's, or the webhook's own rate_limit where it is lower. The
  // first delivery beyond it is promised the next slot; it and those after it wait, untouched.
  const rate = Math.min(config.endpointRate, webhook.rate_limit ?? config.endpointRate);
  const allowed: DeliveryToAttempt[] = [];
  let heldUntil: number | null = null;
  forgetStale(endpoint.schedule, now);
  for (const row of aes === null ? [] : rows) {
    const wait = admit(endpoint.schedule, row.delivery_id, rate, now);
    if (wait > 0) {
      heldUntil = now + wait;
      break;
    }
    allowed.push(row);
  }
  const dispatched = await dispatchAll(aes === null ? rows : allowed, { aes, origins, config, fetcher });
  const record = recordOf(dispatched, config, Date.now());
  recordDeliveries(storage, record.attempts, record.changes);
  // D1 is written only when the webhook's health changes as it read a moment ago: healthy and
  // failing now, failing and healthy now, or due to be disabled (the statements check again).
  const since = webhook.failing_since;
  const health = record.health.filter((h) => h.ok === (since !== null));
  const disable = record.disable.filter((d) => d.gone || (since !== null && since <= d.cutoff));
  if (health.length > 0 || disable.length > 0) {
    try {
      await retryD1(() => env.DB.batch(healthStatements(env.DB, health, disable)));
    } catch (err) {
      // The next pass's attempts say it again.
      log('error', { msg: "could not record the webhook's health", webhook_id: webhookId }, err);
    }
  }
  return heldUntil ?? nextDue(storage.sql);
}
