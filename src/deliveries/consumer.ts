// The consumer of the deliveries queue: one queue batch is the unit of D1 work. Its deliveries are
// loaded in one statement, attempted concurrently, and recorded in one batch.
import { ApiFailure, ConfigError } from '../http/envelope';
import { log } from '../http/log';
import { retryD1 } from '../webhooks/d1';
import { provideSecrets } from '../webhooks/store';
import { webhookUrl } from '../webhooks/url';
import { type AttemptResult, attempt } from './attempt';
import { allowedOrigins, type DeliveryConfig, deliveryConfig, MAX_DELAY_SECONDS } from './config';
import type { DeliveryMessage } from './queue';
import { decryptSecret, sealedNewSecret, secretKey, signature, signingKey } from './signing';
import {
  type AttemptRecord,
  type DeliveryChange,
  type DeliveryToAttempt,
  type DisableCandidate,
  type HealthChange,
  loadDeliveries,
  recordBatch,
} from './store';

/** Attempts open at once: the runtime allows six open connections per invocation. */
export const MAX_CONCURRENT_ATTEMPTS = 6;
/** A message that arrives this early is put back until its attempt is due. */
const EARLY_MS = 2000;
/** How long deliveries wait when they cannot be attempted now (configuration, storage). */
export const WAIT_SECONDS = 60;
const STORAGE_WAIT_SECONDS = 10;
/** However short AUTO_DISABLE_AFTER_HOURS, two failures at least this far apart are needed. */
const MIN_FAILING_HOURS = 12;

const iso = (ms: number) => new Date(ms).toISOString();
const encoder = new TextEncoder();

/** The delivery and queue generation of a message body, or null when it is not one of ours. */
function deliveryOf(body: unknown): { id: string; gen: number } | null {
  const { delivery_id: id, gen = 0 } = (body ?? {}) as Partial<DeliveryMessage>;
  if (typeof id !== 'string' || !/^[1-9]\d{0,18}$/.test(id)) return null;
  return Number.isSafeInteger(gen) && gen >= 0 ? { id, gen } : null;
}

// HMAC keys of stored secrets, per isolate: decrypting and importing once per webhook secret.
const signingKeys = new Map<string, Promise<CryptoKey>>();
const SIGNING_KEYS_MAX = 1000;

function signingKeyOf(aes: CryptoKey, sealed: string): Promise<CryptoKey> {
  let key = signingKeys.get(sealed);
  if (key === undefined) {
    if (signingKeys.size >= SIGNING_KEYS_MAX) signingKeys.delete(signingKeys.keys().next().value as string);
    key = decryptSecret(aes, sealed).then(signingKey);
    signingKeys.set(sealed, key);
    key.catch(() => signingKeys.delete(sealed));
  }
  return key;
}

/** The keys that sign a delivery's requests: the current secret's, and the previous one's while it lasts. */
async function keysOf(aes: CryptoKey, row: DeliveryToAttempt, now: number): Promise<CryptoKey[]> {
  const keys = [signingKeyOf(aes, row.secret as string)];
  if (
    row.previous_secret !== null &&
    row.previous_secret_until !== null &&
    Date.parse(row.previous_secret_until) > now
  ) {
    keys.push(signingKeyOf(aes, row.previous_secret));
  }
  return Promise.all(keys);
}

/**
 * At most `limit` of the runs at once; the others wait their turn. A finished run hands its slot
 * straight to the next waiting one.
 */
function slots(limit: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(run: () => Promise<T>): Promise<T> => {
    if (active < limit) active++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await run();
    } finally {
      const next = waiting.shift();
      if (next === undefined) active--;
      else next();
    }
  };
}

/** Gives webhooks registered before secrets existed their secret (one more round trip, once per webhook). */
async function provideLegacySecrets(env: CloudflareBindings, rows: DeliveryToAttempt[]): Promise<void> {
  const legacy = [...new Set(rows.filter((r) => r.secret === null && r.url !== null).map((r) => r.webhook_id))];
  if (legacy.length === 0) return;
  const items = await Promise.all(
    legacy.map(async (webhookId) => ({ webhookId, sealed: (await sealedNewSecret(env)).sealed })),
  );
  const secrets = await retryD1(() => provideSecrets(env.DB, items), retryLog);
  for (const row of rows) {
    const stored = secrets.get(row.webhook_id);
    if (row.secret === null && stored !== undefined) {
      row.secret = stored.secret;
      row.previous_secret = stored.previous_secret;
      row.previous_secret_until = stored.previous_secret_until;
    }
  }
}

const retryLog = (attempt: number, err: unknown) => log('warn', { msg: 'retrying transient D1 error', attempt }, err);

/** What to do with one delivery's message after the batch. */
type Verdict = { ack: true } | { ack: false; delaySeconds: number };

/** The delivery's state after an attempt, its message's verdict, and what it says of the webhook. */
function afterAttempt(
  row: DeliveryToAttempt,
  result: AttemptResult,
  at: number,
  config: DeliveryConfig,
): { change: DeliveryChange; verdict: Verdict; ok: boolean; gone: boolean } {
  const attempts = row.attempts + 1;
  const base = { delivery_id: row.delivery_id, expected: row.attempts, attempts };
  const record = { at: iso(at), status: result.status, error: result.error };
  const ok = result.status !== null && result.status >= 200 && result.status < 300;
  const gone = result.status === 410;
  const step = attempts - row.schedule_start - 1;
  const scheduled = config.schedule[step];
  if (ok || gone || scheduled === undefined) {
    const status = ok ? 'succeeded' : 'failed';
    return { change: { ...base, status, next_attempt_at: null, attempt: record }, verdict: { ack: true }, ok, gone };
  }
  const delay =
    result.retryAfter === null ? scheduled : Math.max(scheduled, Math.min(result.retryAfter, MAX_DELAY_SECONDS));
  return {
    change: { ...base, status: 'pending', next_attempt_at: iso(at + delay * 1000), attempt: record },
    verdict: { ack: false, delaySeconds: delay },
    ok,
    gone,
  };
}

/**
 * The deliveries queue's consumer. Every delivery of the batch that is due is attempted once;
 * what happened is recorded; each message is acknowledged (the delivery ended, or needs nothing)
 * or put back with the delay of its next attempt. D1 is the record, the queue only the timer: a
 * lost message is found again by the Cron Trigger.
 */
export async function consumeDeliveries(
  batch: MessageBatch<unknown>,
  env: CloudflareBindings,
  fetcher: typeof fetch = fetch,
): Promise<void> {
  let config: DeliveryConfig;
  let allowed: ReadonlySet<string>;
  try {
    config = deliveryConfig(env);
    allowed = allowedOrigins(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    log('error', { msg: `configuration error: ${err.setting}: ${err.message}; deliveries wait` });
    batch.retryAll({ delaySeconds: WAIT_SECONDS });
    return;
  }

  const messages = new Map<string, { message: Message<unknown>; gen: number }[]>();
  for (const message of batch.messages) {
    const delivery = deliveryOf(message.body);
    if (delivery === null) {
      log('warn', { msg: 'dropped a malformed delivery message', message_id: message.id });
      message.ack();
      continue;
    }
    messages.set(delivery.id, [...(messages.get(delivery.id) ?? []), { message, gen: delivery.gen }]);
  }
  if (messages.size === 0) return;

  let rows: DeliveryToAttempt[];
  try {
    rows = await retryD1(() => loadDeliveries(env.DB, [...messages.keys()]), retryLog);
  } catch (err) {
    log(
      'error',
      { msg: 'could not load deliveries; the batch is retried' },
      err instanceof ApiFailure ? err.cause : err,
    );
    batch.retryAll({ delaySeconds: STORAGE_WAIT_SECONDS });
    return;
  }

  const verdicts = new Map<string, Verdict>();
  const changes: DeliveryChange[] = [];
  const attempts: AttemptRecord[] = [];
  const health = new Map<string, HealthChange>();
  const disable = new Map<string, DisableCandidate>();
  const now = Date.now();
  // The message that stands for each delivery: the first of its current queue generation. Copies
  // of an older generation (a message the Cron Trigger replaced) and duplicates are acknowledged.
  const current = new Map<string, Message<unknown>>();

  // Deliveries that ended, lost their webhook, or are not due yet need no attempt.
  const due: DeliveryToAttempt[] = [];
  for (const row of rows) {
    const message = messages.get(row.delivery_id)?.find((m) => m.gen === row.queue_gen)?.message;
    if (message === undefined) continue;
    current.set(row.delivery_id, message);
    if (row.status !== 'pending') {
      verdicts.set(row.delivery_id, { ack: true });
    } else if (row.next_attempt_at !== null && Date.parse(row.next_attempt_at) - now > EARLY_MS) {
      const wait = Math.ceil((Date.parse(row.next_attempt_at) - now) / 1000);
      verdicts.set(row.delivery_id, { ack: false, delaySeconds: Math.min(wait, MAX_DELAY_SECONDS) });
    } else if (row.url === null || row.is_enabled !== 1) {
      changes.push({
        delivery_id: row.delivery_id,
        expected: row.attempts,
        status: 'cancelled',
        attempts: row.attempts,
        next_attempt_at: null,
        attempt: null,
      });
      verdicts.set(row.delivery_id, { ack: true });
    } else {
      due.push(row);
    }
  }

  let aes: CryptoKey | null = null;
  if (due.length > 0) {
    try {
      aes = await secretKey(env);
      await provideLegacySecrets(env, due);
    } catch (err) {
      const why =
        err instanceof ConfigError
          ? `configuration error: ${err.setting}: ${err.message}`
          : 'could not read signing secrets';
      log('error', { msg: `${why}; deliveries wait` }, err instanceof ConfigError ? undefined : err);
      aes = null;
    }
  }

  /** No attempt now: the delivery waits WAIT_SECONDS (configuration, secrets, the unexpected). */
  const waitFor = (row: DeliveryToAttempt) => {
    changes.push({
      delivery_id: row.delivery_id,
      expected: row.attempts,
      status: 'pending',
      attempts: row.attempts,
      next_attempt_at: iso(Date.now() + WAIT_SECONDS * 1000),
      attempt: null,
    });
    verdicts.set(row.delivery_id, { ack: false, delaySeconds: WAIT_SECONDS });
  };

  const connection = slots(MAX_CONCURRENT_ATTEMPTS);
  const tasks = due.map((row) => async () => {
    const messageId = current.get(row.delivery_id)?.id ?? '';
    const wait = () => waitFor(row);
    let keys: CryptoKey[];
    try {
      if (aes === null || row.secret === null) return wait();
      keys = await keysOf(aes, row, Date.now());
    } catch (err) {
      log(
        'error',
        {
          msg: 'a signing secret does not decrypt with WEBHOOK_SECRET_KEY; the delivery waits',
          delivery_id: row.delivery_id,
          webhook_id: row.webhook_id,
        },
        err,
      );
      return wait();
    }
    const at = Date.now();
    let result: AttemptResult;
    try {
      // The URL rules may have tightened since it was registered: a refused URL is never requested.
      const url = webhookUrl(row.url as string, allowed);
      const body = encoder.encode(row.payload);
      const timestamp = Math.floor(at / 1000);
      const headers = {
        'webhook-id': row.event_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': await signature(keys, row.event_id, timestamp, body),
      };
      // Only the request holds one of the six connections; signing and recording do not.
      result = await connection(() =>
        attempt({ url, body, headers, timeoutMs: config.timeoutSeconds * 1000 }, fetcher),
      );
    } catch (err) {
      if (!(err instanceof ApiFailure)) throw err;
      result = { status: null, error: 'url_refused', body: null, retryAfter: null, durationMs: 0 };
    }
    const { change, verdict, ok, gone } = afterAttempt(row, result, at, config);
    changes.push(change);
    verdicts.set(row.delivery_id, verdict);
    attempts.push({
      delivery_id: row.delivery_id,
      attempt: change.attempts,
      attempted_at: iso(at),
      status: result.status,
      error: result.error,
      duration_ms: result.durationMs,
      body: result.body,
    });
    const seen = health.get(row.webhook_id);
    if (ok) health.set(row.webhook_id, { webhook_id: row.webhook_id, ok: true, at: iso(at) });
    else if (seen === undefined) health.set(row.webhook_id, { webhook_id: row.webhook_id, ok: false, at: iso(at) });
    if (!ok) {
      // One candidate per webhook (one audit record): 410 if any attempt of the batch got one.
      const hours = Math.max(config.autoDisableHours, MIN_FAILING_HOURS);
      const before = disable.get(row.webhook_id);
      disable.set(row.webhook_id, {
        webhook_id: row.webhook_id,
        gone: gone || before?.gone === true,
        cutoff: iso(at - hours * 3_600_000),
        request_id: before?.request_id ?? `queue:${messageId}`,
      });
    }
    log('info', {
      msg: 'delivery attempt',
      delivery_id: row.delivery_id,
      webhook_id: row.webhook_id,
      event_id: row.event_id,
      attempt: change.attempts,
      status: result.status,
      error: result.error,
      duration_ms: result.durationMs,
      outcome: change.status,
    });
  });
  await Promise.all(
    tasks.map(async (task, i) => {
      try {
        await task();
      } catch (err) {
        // One delivery's unexpected failure never costs the batch its record.
        const row = due[i] as DeliveryToAttempt;
        log('error', { msg: 'a delivery failed unexpectedly; it waits', delivery_id: row.delivery_id }, err);
        if (!verdicts.has(row.delivery_id)) waitFor(row);
      }
    }),
  );

  try {
    await retryD1(() => recordBatch(env.DB, attempts, changes, [...health.values()], [...disable.values()]), retryLog);
  } catch (err) {
    // Its deliveries are attempted again (a state change already recorded is not recorded twice).
    log(
      'error',
      { msg: 'could not record deliveries; the batch is retried' },
      err instanceof ApiFailure ? err.cause : err,
    );
    batch.retryAll({ delaySeconds: STORAGE_WAIT_SECONDS });
    return;
  }

  for (const [id, list] of messages) {
    // A delivery that no longer exists (purged) needs nothing more; copies and stale generations
    // are acknowledged: only the current message carries the delivery on.
    const verdict = verdicts.get(id) ?? { ack: true };
    for (const { message } of list) {
      if (verdict.ack || message !== current.get(id)) message.ack();
      else message.retry({ delaySeconds: verdict.delaySeconds });
    }
  }
}
