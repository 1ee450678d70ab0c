// The platform's operational endpoint: one reserved endpoint object (PLATFORM_ENDPOINT) holds every
// application's operational events for OPERATIONAL_WEBHOOK_URL and sends them as any endpoint's
// object sends: each signed (Standard Webhooks, with OPERATIONAL_WEBHOOK_SECRET), retried on the
// retry schedule, every attempt recorded in its own storage. Its settings come from the Worker's
// settings, not from D1: it has no row in `webhooks`, no rate of its own, no health and no
// operational events about itself. While its settings are invalid nothing is sent: its deliveries
// wait, and each pass says which setting is wrong.
import type { DeliveryConfig } from '../core/delivery-settings';
import { ConfigError, describeFailure } from '../core/errors';
import { log } from '../core/log';
import { operationalEndpoint } from '../core/operational-settings';
import { attempt } from './attempt';
import { MAX_CONCURRENT_ATTEMPTS } from './dispatch';
import { afterAttempt, WAIT_SECONDS, waiting } from './schedule';
import { signature, signingKey } from './signing';
import {
  type AttemptRecord,
  type DeliveryChange,
  type DueDelivery,
  dueDeliveries,
  nextDue,
  recordDeliveries,
} from './store/sending';

/** Due deliveries one pass takes. */
const PASS_DELIVERIES = 50;
const encoder = new TextEncoder();
const iso = (ms: number) => new Date(ms).toISOString();

/** One pass of the platform's endpoint. Returns when it should send again (ms; null: nothing pending). */
export async function sendPlatformDue(
  storage: DurableObjectStorage,
  env: CloudflareBindings,
  config: DeliveryConfig,
  fetcher: typeof fetch,
): Promise<number | null> {
  const now = Date.now();
  const due = dueDeliveries(storage.sql, iso(now), PASS_DELIVERIES);
  if (due.length === 0) return nextDue(storage.sql);
  let target: { url: string; secret: string } | null;
  try {
    target = operationalEndpoint(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    target = null;
    log('error', { msg: `${describeFailure(err)}; operational deliveries wait` });
  }
  if (target === null) {
    // Unset since (or invalid): they wait, unsent, until it is set right.
    recordDeliveries(
      storage,
      [],
      due.map((d) => waiting(d, now, WAIT_SECONDS)),
    );
    return nextDue(storage.sql);
  }
  const { url, secret } = target;
  const key = await signingKey(secret);
  const attempts: AttemptRecord[] = [];
  const changes: DeliveryChange[] = [];
  // Six at once (the connections an invocation has), each recorded as it would be anywhere.
  for (let at = 0; at < due.length; at += MAX_CONCURRENT_ATTEMPTS) {
    const sent = await Promise.all(
      due.slice(at, at + MAX_CONCURRENT_ATTEMPTS).map((row) => sendOne(row, url, key, config, fetcher)),
    );
    for (const { attempt, change } of sent) {
      attempts.push(attempt);
      changes.push(change);
    }
  }
  recordDeliveries(storage, attempts, changes);
  return nextDue(storage.sql);
}

/** One signed attempt of a delivery to the platform's endpoint, as its record and its new state. */
async function sendOne(
  row: DueDelivery,
  url: string,
  key: CryptoKey,
  config: DeliveryConfig,
  fetcher: typeof fetch,
): Promise<{ attempt: AttemptRecord; change: DeliveryChange }> {
  const at = Date.now();
  const body = encoder.encode(row.payload);
  const timestamp = Math.floor(at / 1000);
  const headers = {
    'webhook-id': row.message_id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': await signature([key], row.message_id, timestamp, body),
  };
  const result = await attempt({ url, body, headers, timeoutMs: config.timeoutSeconds * 1000 }, fetcher);
  const change = afterAttempt(row, result, at, config);
  log('info', {
    msg: 'operational delivery attempt',
    delivery_id: row.delivery_id,
    message_id: row.message_id,
    attempt: change.attempts,
    status: result.status,
    error: result.error,
    outcome: change.status,
  });
  const record: AttemptRecord = {
    delivery_id: row.delivery_id,
    attempt: change.attempts,
    attempted_at: iso(at),
    status: result.status,
    error: result.error,
    duration_ms: result.durationMs,
    body: result.body,
  };
  return { attempt: record, change };
}
