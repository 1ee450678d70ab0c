// The consumer of the deliveries queue. A queue batch is the unit of D1 work, in six steps: load
// its deliveries (one statement), plan which are due, hold back what their endpoints' rates do not
// allow yet, dispatch the rest (concurrently), record what happened (one batch), settle the messages. D1 is the record, the queue only the timer: a lost
// message is found again by the Cron Trigger.

import { type DeliveryConfig, deliveryConfig } from '../core/delivery-settings';
import { ConfigError, describeFailure, StorageFailure } from '../core/errors';
import { parseId } from '../core/int64';
import { log } from '../core/log';
import { retryD1 } from '../platform/d1';
import { type DeliveryMessage, type QueuedDelivery, queueDeliveries } from '../platform/queues';
import { allowedOrigins } from '../webhooks/url';
import { dispatchAll, prepareSigning } from './dispatch';
import { planBatch } from './plan';
import { recordOf } from './record';
import { type Verdict, WAIT_SECONDS } from './schedule';
import { type DeliveryToAttempt, loadDeliveries, recordBatch } from './store/dispatch';
import { throttle } from './throttle';

/** How long a batch waits when storage cannot load or record it. */
const STORAGE_WAIT_SECONDS = 10;

/** The delivery and queue generation of a message body, or null when it is not one of ours. */
function deliveryOf(body: unknown): { id: string; gen: number } | null {
  const { delivery_id: text, gen = 0 } = (body ?? {}) as Partial<DeliveryMessage>;
  const id = typeof text === 'string' && text === parseId(text) ? text : null;
  return id !== null && Number.isSafeInteger(gen) && gen >= 0 ? { id, gen } : null;
}

type Messages = Map<string, { message: Message<unknown>; gen: number }[]>;

/** The batch's messages by delivery; a message that is not one of ours is acknowledged and logged. */
function messagesByDelivery(batch: MessageBatch<unknown>): Messages {
  const messages: Messages = new Map();
  for (const message of batch.messages) {
    const delivery = deliveryOf(message.body);
    if (delivery === null) {
      log('warn', { msg: 'dropped a malformed delivery message', message_id: message.id });
      message.ack();
      continue;
    }
    messages.set(delivery.id, [...(messages.get(delivery.id) ?? []), { message, gen: delivery.gen }]);
  }
  return messages;
}

/** The whole batch tried again later: nothing could be done for it now. */
function retryBatch(batch: MessageBatch<unknown>, msg: string, delaySeconds: number, err?: unknown) {
  log('error', { msg }, err instanceof StorageFailure ? err.cause : err);
  batch.retryAll({ delaySeconds });
}

/**
 * The deliveries queue's consumer. Every delivery of the batch that is due is attempted once;
 * what happened is recorded; each message is acknowledged (the delivery ended, or needs nothing)
 * or put back with the delay of its next attempt.
 */
export async function consumeDeliveries(
  batch: MessageBatch<unknown>,
  env: CloudflareBindings,
  fetcher: typeof fetch = fetch,
): Promise<void> {
  let config: DeliveryConfig;
  let origins: ReadonlySet<string>;
  try {
    config = deliveryConfig(env);
    origins = allowedOrigins(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return retryBatch(batch, `${describeFailure(err)}; deliveries wait`, WAIT_SECONDS);
  }
  const messages = messagesByDelivery(batch);
  if (messages.size === 0) return;

  let rows: DeliveryToAttempt[];
  try {
    rows = await retryD1(() => loadDeliveries(env.DB, [...messages.keys()]));
  } catch (err) {
    return retryBatch(batch, 'could not load deliveries; the batch is retried', STORAGE_WAIT_SECONDS, err);
  }
  const generations = new Map(
    [...messages].map(([id, list]) => [id, list.map((m) => ({ id: m.message.id, gen: m.gen }))]),
  );
  const plan = planBatch(rows, generations, Date.now());
  // Each endpoint's rate: the service's, or the webhook's own rate_limit where it is lower.
  const rateOf = (row: DeliveryToAttempt) => Math.min(config.endpointRate, row.rate_limit ?? config.endpointRate);
  const { allowed, held } = await throttle(env, plan.due, rateOf);
  const aes = await prepareSigning(env, allowed);
  const context = { aes, origins, config, fetcher };
  const dispatched = await dispatchAll(allowed, context);
  const record = recordOf(plan, held, dispatched, config, Date.now());

  try {
    await retryD1(() => recordBatch(env.DB, record.attempts, record.changes, record.health, record.disable));
  } catch (err) {
    // Its deliveries are attempted again (a state change already recorded is not recorded twice).
    return retryBatch(batch, 'could not record deliveries; the batch is retried', STORAGE_WAIT_SECONDS, err);
  }

  await settle(env, messages, plan.current, record.verdicts);
}

/**
 * Acknowledges each message or has it come back after its delivery's delay: put back (a retry),
 * or sent anew (a wait that is no retry; put back if it cannot be sent). Only the current message
 * carries a delivery on; copies, stale generations and deliveries that no longer exist (purged)
 * are acknowledged.
 */
async function settle(
  env: CloudflareBindings,
  messages: Messages,
  current: Map<string, string>,
  verdicts: Map<string, Verdict>,
) {
  const anew: { message: Message<unknown>; delivery: QueuedDelivery }[] = [];
  for (const [id, list] of messages) {
    const verdict = verdicts.get(id) ?? { ack: true };
    for (const { message, gen } of list) {
      if (verdict.ack || message.id !== current.get(id)) message.ack();
      else if (verdict.fresh === true)
        anew.push({ message, delivery: { id, gen, delaySeconds: verdict.delaySeconds } });
      else message.retry({ delaySeconds: verdict.delaySeconds });
    }
  }
  if (anew.length === 0) return;
  const sent = await queueDeliveries(
    env,
    anew.map((a) => a.delivery),
  );
  for (const { message, delivery } of anew) {
    if (sent) message.ack();
    else message.retry({ delaySeconds: delivery.delaySeconds });
  }
}
