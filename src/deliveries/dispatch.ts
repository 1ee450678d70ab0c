// The middle of a sending pass: each due delivery's request, signed and sent, as a value. Its one
// write is in D1, before signing: a webhook from before signing secrets is given its secret
// (provideSecrets, atomically). What the attempts did is recorded by the caller (record.ts, then
// the endpoint's object).

import type { DeliveryConfig } from '../core/delivery-settings';
import { ConfigError, describeFailure, InvalidInput } from '../core/errors';
import { log } from '../core/log';
import { retryD1 } from '../platform/d1';
import { decryptSecret, sealedNewSecret, secretKey } from '../webhooks/secrets';
import { provideSecrets } from '../webhooks/store/secrets';
import { webhookUrl } from '../webhooks/url';
import { type AttemptResult, attempt } from './attempt';
import { afterAttempt } from './schedule';
import { signature, signingKey } from './signing';
import type { DeliveryToAttempt } from './store/sending';

/** Attempts open at once per endpoint: the runtime allows six open connections per invocation. */
export const MAX_CONCURRENT_ATTEMPTS = 6;

/**
 * What became of one due delivery: an attempt was made (at `at`), with what it means for the
 * delivery (`next`: its new state); or it waits (no request).
 */
export type Dispatched =
  | {
      row: DeliveryToAttempt;
      kind: 'attempted';
      at: number;
      result: AttemptResult;
      next: ReturnType<typeof afterAttempt>;
    }
  | { row: DeliveryToAttempt; kind: 'wait' };

/**
 * What the requests of a pass need: the key that opens signing secrets (null: none can be), the
 * origins exempt from the URL rules (WEBHOOK_URL_ALLOWED_ORIGINS), the timeout, the fetch.
 */
export interface DispatchContext {
  aes: CryptoKey | null;
  origins: ReadonlySet<string>;
  config: DeliveryConfig;
  fetcher: typeof fetch;
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
function keysOf(aes: CryptoKey, row: DeliveryToAttempt, now: number): Promise<CryptoKey[]> {
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
 * The key that opens the due deliveries' signing secrets, after giving webhooks registered before
 * secrets existed theirs (one more round trip, once in a webhook's life). Null when that cannot
 * be done now (configuration, storage): the deliveries then wait.
 */
export async function prepareSigning(env: CloudflareBindings, due: DeliveryToAttempt[]): Promise<CryptoKey | null> {
  if (due.length === 0) return null;
  try {
    const aes = await secretKey(env);
    await provideLegacySecrets(env, due);
    return aes;
  } catch (err) {
    const config = err instanceof ConfigError;
    const why = config ? describeFailure(err) : 'could not read signing secrets';
    log('error', { msg: `${why}; deliveries wait` }, config ? undefined : err);
    return null;
  }
}

async function provideLegacySecrets(env: CloudflareBindings, rows: DeliveryToAttempt[]): Promise<void> {
  const legacy = [...new Set(rows.filter((r) => r.secret === null).map((r) => r.webhook_id))];
  if (legacy.length === 0) return;
  const items = await Promise.all(
    legacy.map(async (webhookId) => ({ webhookId, sealed: (await sealedNewSecret(env)).sealed })),
  );
  const secrets = await retryD1(() => provideSecrets(env.DB, items));
  for (const row of rows) {
    const stored = secrets.get(row.webhook_id);
    if (row.secret === null && stored !== undefined) {
      row.secret = stored.secret;
      row.previous_secret = stored.previous_secret;
      row.previous_secret_until = stored.previous_secret_until;
    }
  }
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

const encoder = new TextEncoder();

/**
 * An attempt that ended: what it means for the delivery (the retry schedule), logged as it ends:
 * what was sent where, what came back, what the delivery becomes.
 */
function attempted(row: DeliveryToAttempt, at: number, result: AttemptResult, config: DeliveryConfig): Dispatched {
  const change = afterAttempt(row, result, at, config);
  log('info', {
    msg: 'delivery attempt',
    delivery_id: row.delivery_id,
    webhook_id: row.webhook_id,
    message_id: row.message_id,
    attempt: change.attempts,
    status: result.status,
    error: result.error,
    duration_ms: result.durationMs,
    outcome: change.status,
  });
  return { row, kind: 'attempted', at, result, next: change };
}

/** One due delivery: its signed request, sent while holding one of the pass's connections. */
async function dispatch(
  row: DeliveryToAttempt,
  context: DispatchContext,
  connection: ReturnType<typeof slots>,
): Promise<Dispatched> {
  const { aes } = context;
  if (aes === null || row.secret === null) return { row, kind: 'wait' };
  let keys: CryptoKey[];
  try {
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
    return { row, kind: 'wait' };
  }
  const at = Date.now();
  let url: string;
  try {
    // The URL rules may have tightened since it was registered: a refused URL is never requested.
    url = webhookUrl(row.url, context.origins);
  } catch (err) {
    if (!(err instanceof InvalidInput)) throw err;
    const result: AttemptResult = { status: null, error: 'url_refused', body: null, retryAfter: null, durationMs: 0 };
    return attempted(row, at, result, context.config);
  }
  const body = encoder.encode(row.payload);
  const timestamp = Math.floor(at / 1000);
  const headers = {
    'webhook-id': row.message_id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': await signature(keys, row.message_id, timestamp, body),
  };
  // Only the request holds one of the six connections; signing and recording do not.
  const timeoutMs = context.config.timeoutSeconds * 1000;
  const result = await connection(() => attempt({ url, body, headers, timeoutMs }, context.fetcher));
  return attempted(row, at, result, context.config);
}

/**
 * Every due delivery dispatched, concurrently, at most MAX_CONCURRENT_ATTEMPTS requests open at
 * once; the results in the order of `due`. One delivery's unexpected failure makes it wait and
 * never costs the others theirs.
 */
export function dispatchAll(due: DeliveryToAttempt[], context: DispatchContext): Promise<Dispatched[]> {
  const connection = slots(MAX_CONCURRENT_ATTEMPTS);
  return Promise.all(
    due.map(async (row): Promise<Dispatched> => {
      try {
        return await dispatch(row, context, connection);
      } catch (err) {
        log('error', { msg: 'a delivery failed unexpectedly; it waits', delivery_id: row.delivery_id }, err);
        return { row, kind: 'wait' };
      }
    }),
  );
}
