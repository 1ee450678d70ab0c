// The middle of a sending pass: each due delivery, as its turn comes, admitted by the pass's gate
// (the webhook as it stands, the rates), signed and sent, as a value. Its one write is in D1,
// before signing: a webhook from before signing secrets is given its secret (provideSecrets,
// atomically). What the attempts did is recorded by the caller (record.ts, then the endpoint's
// object).

import type { DeliveryConfig } from '../core/delivery-settings';
import type { ApiBase, DestinationFields } from '../core/destinations';
import { ConfigError, describeFailure, InvalidInput } from '../core/errors';
import { log } from '../core/log';
import { retryD1 } from '../platform/d1';
import { openSecret, type SecretKeys, sealedNewSecret, secretKeys, UnopenedSecret } from '../webhooks/secrets';
import type { SendingRow } from '../webhooks/store/reads';
import { provideSecrets } from '../webhooks/store/secrets';
import { webhookUrl } from '../webhooks/url';
import type { AttemptResult } from './attempt';
import { httpProvider, type OpenDestination, PROVIDERS, type SendOptions } from './destinations/index';
import type { Gate } from './gate';
import { afterAttempt } from './schedule';
import { signature, signingKey } from './signing';
import type { DeliveryToAttempt, DueDelivery } from './store/sending';

/** Attempts open at once per endpoint: the runtime allows six open connections per invocation. */
export const MAX_CONCURRENT_ATTEMPTS = 6;

/**
 * What became of one due delivery: an attempt was made (at `at`), with what it means for the
 * delivery (`next`: its new state); it waits a while (no request: it could not be signed); it is
 * held for its slot (no request, untouched); or it ends cancelled (the webhook is gone or disabled).
 */
export type Dispatched =
  | {
      row: DeliveryToAttempt;
      kind: 'attempted';
      at: number;
      result: AttemptResult;
      next: ReturnType<typeof afterAttempt>;
    }
  | { row: DueDelivery; kind: 'wait' | 'held' | 'cancelled' };

/**
 * What the requests of a pass need: the keys that open signing secrets, the origins exempt from
 * the URL rules (WEBHOOK_URL_ALLOWED_ORIGINS), the timeout, the fetch, the pass's gate.
 */
export interface DispatchContext {
  secretKeys: SecretKeys;
  origins: ReadonlySet<string>;
  config: DeliveryConfig;
  fetcher: typeof fetch;
  gate: Gate;
  webhookId: string;
}

// HMAC keys of stored secrets, per isolate: decrypting and importing once per webhook secret.
const signingKeys = new Map<string, Promise<CryptoKey>>();
const SIGNING_KEYS_MAX = 1000;

function signingKeyOf(keys: SecretKeys, sealed: string): Promise<CryptoKey> {
  let key = signingKeys.get(sealed);
  if (key === undefined) {
    if (signingKeys.size >= SIGNING_KEYS_MAX) signingKeys.delete(signingKeys.keys().next().value as string);
    key = openSecret(keys, sealed).then(signingKey);
    signingKeys.set(sealed, key);
    key.catch(() => signingKeys.delete(sealed));
  }
  return key;
}

// Credentials and sensitive headers opened, per isolate, by their sealed form (as signing keys are).
const opened = new Map<string, Promise<Record<string, string>>>();

function openedOf(keys: SecretKeys, sealed: string | null | undefined): Promise<Record<string, string>> {
  if (sealed === null || sealed === undefined) return Promise.resolve({});
  let value = opened.get(sealed);
  if (value === undefined) {
    if (opened.size >= SIGNING_KEYS_MAX) opened.delete(opened.keys().next().value as string);
    value = openSecret(keys, sealed).then((text) => JSON.parse(text) as Record<string, string>);
    opened.set(sealed, value);
    value.catch(() => opened.delete(sealed));
  }
  return value;
}

/** The webhook's destination (HTTP when none is stored) and headers, their sealed parts opened. */
async function openDestination(
  keys: SecretKeys,
  destination: string | null,
  headers: string | null,
): Promise<OpenDestination> {
  const { sealed, ...fields } =
    destination === null ? { type: 'http' as const } : (JSON.parse(destination) as DestinationFields);
  const stored =
    headers === null ? null : (JSON.parse(headers) as { values: Record<string, string>; sealed: string | null });
  const credentials = await openedOf(keys, sealed);
  const sensitive = stored === null ? {} : await openedOf(keys, stored.sealed);
  return {
    fields: fields as DestinationFields,
    credentials,
    headers: stored === null ? {} : { ...stored.values, ...sensitive },
    secrets: [...Object.values(credentials), ...Object.values(sensitive)],
  };
}

const NO_BASES: ReadonlyMap<ApiBase, string> = new Map();

/** The keys that sign a delivery's requests: the current secret's, and the previous one's while it lasts. */
function keysOf(secretKeys: SecretKeys, row: DeliveryToAttempt, now: number): Promise<CryptoKey[]> {
  const keys = [signingKeyOf(secretKeys, row.secret as string)];
  if (
    row.previous_secret !== null &&
    row.previous_secret_until !== null &&
    Date.parse(row.previous_secret_until) > now
  ) {
    keys.push(signingKeyOf(secretKeys, row.previous_secret));
  }
  return Promise.all(keys);
}

/**
 * The keys that open the webhook's signing secrets, after giving a webhook registered before
 * secrets existed its own (one more round trip, once in its life; `webhook` is updated). Null when
 * that cannot be done now (configuration, storage): its deliveries then wait.
 */
export async function prepareSigning(
  env: CloudflareBindings,
  webhookId: string,
  webhook: SendingRow,
): Promise<SecretKeys | null> {
  try {
    const keys = await secretKeys(env);
    if (webhook.secret === null) {
      const { sealed } = await sealedNewSecret(env);
      const stored = (await retryD1(() => provideSecrets(env.DB, [{ webhookId, sealed }]))).get(webhookId);
      if (stored !== undefined) Object.assign(webhook, stored);
    }
    return keys;
  } catch (err) {
    const config = err instanceof ConfigError;
    const why = config ? describeFailure(err) : 'could not read signing secrets';
    log('error', { msg: `${why}; deliveries wait`, webhook_id: webhookId }, config ? undefined : err);
    return null;
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
 * An attempt that ended: what it means for the delivery (the retry schedule). One that did not
 * succeed is logged as it ends (what was sent where, what came back, what the delivery becomes):
 * the line an operator looks for. Successes are logged by their pass, one line for all of them
 * (logSucceeded), since a line per success cost a sixth of a busy endpoint's time.
 */
function attempted(row: DeliveryToAttempt, at: number, result: AttemptResult, config: DeliveryConfig): Dispatched {
  const change = afterAttempt(row, result, at, config);
  if (change.status === 'succeeded') return { row, kind: 'attempted', at, result, next: change };
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

/** One line for the attempts of a pass that succeeded: the webhook, how many, and which deliveries. */
export function logSucceeded(webhookId: string, dispatched: Dispatched[]): void {
  const ok = dispatched.flatMap((d) => (d.kind === 'attempted' && d.next.status === 'succeeded' ? [d] : []));
  if (ok.length === 0) return;
  log('info', {
    msg: 'deliveries succeeded',
    webhook_id: webhookId,
    attempts: ok.length,
    delivery_ids: ok.map((d) => d.row.delivery_id),
  });
}

/**
 * One due delivery, as its turn for one of the pass's connections comes: admitted by the gate
 * just before it starts (else cancelled or held), signed with the webhook's secrets as they stand,
 * and sent. Should the webhook change while it is being signed, it is admitted again.
 */
function dispatch(
  row: DueDelivery,
  context: DispatchContext,
  connection: ReturnType<typeof slots>,
  checkUrl: (url: string) => string,
  shared: SendOptions['shared'],
) {
  return connection(async (): Promise<Dispatched> => {
    for (;;) {
      const admission = await context.gate.admit(row);
      if (admission.kind === 'cancel') return { row, kind: 'cancelled' };
      if (admission.kind === 'hold') return { row, kind: 'held' };
      const { url, secret, previous_secret, previous_secret_until, destination, headers, ordering } = admission.webhook;
      const target: DeliveryToAttempt = {
        ...row,
        webhook_id: context.webhookId,
        url,
        secret,
        previous_secret,
        previous_secret_until,
      };
      if (secret === null) return { row, kind: 'wait' };
      let keys: CryptoKey[];
      let open: OpenDestination;
      try {
        keys = await keysOf(context.secretKeys, target, Date.now());
        open = await openDestination(context.secretKeys, destination, headers);
      } catch (err) {
        // A key missing from the ring names its id; the delivery waits for it, never sent unsigned.
        const missing = err instanceof UnopenedSecret;
        log(
          'error',
          {
            msg: `${missing ? describeFailure(err) : 'a signing secret could not be opened'}; the delivery waits`,
            delivery_id: row.delivery_id,
            webhook_id: context.webhookId,
            key_id: missing ? err.keyId : undefined,
          },
          missing ? undefined : err,
        );
        return { row, kind: 'wait' };
      }
      const at = Date.now();
      let checked = url;
      try {
        // The URL rules may have tightened since it was registered: a refused URL is never requested.
        // Other destinations go to their API's fixed hosts only.
        if (open.fields.type === 'http') checked = checkUrl(url);
      } catch (err) {
        if (!(err instanceof InvalidInput)) throw err;
        const refused: AttemptResult = {
          status: null,
          error: 'url_refused',
          body: null,
          retryAfter: null,
          durationMs: 0,
        };
        return attempted(target, at, refused, context.config);
      }
      const body = encoder.encode(row.payload);
      const timestamp = Math.floor(at / 1000);
      const signed = {
        'webhook-id': row.message_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': await signature(keys, row.message_id, timestamp, body),
      };
      if (context.gate.changedSince(admission)) continue;
      const provider = open.fields.type === 'http' ? httpProvider(checked) : PROVIDERS[open.fields.type];
      const message = {
        webhookId: context.webhookId,
        messageId: row.message_id,
        payload: row.payload,
        body,
        signature: signed,
        fifo: ordering === 'fifo',
      };
      const options = {
        fetcher: context.fetcher,
        timeoutMs: context.config.timeoutSeconds * 1000,
        bases: context.config.apiBases ?? NO_BASES,
        shared,
      };
      const result = await provider.send(open, message, options);
      return attempted(target, at, result, context.config);
    }
  });
}

/**
 * Every due delivery dispatched, concurrently, at most MAX_CONCURRENT_ATTEMPTS requests open at
 * once; the results in the order of `due`. One delivery's unexpected failure makes it wait and
 * never costs the others theirs.
 */
export function dispatchAll(due: DueDelivery[], context: DispatchContext): Promise<Dispatched[]> {
  const connection = slots(MAX_CONCURRENT_ATTEMPTS);
  // Requests the pass's attempts share (a Pub/Sub token): this pass's own, so never one that
  // another object's I/O must settle.
  const shared: SendOptions['shared'] = new Map();
  // The URL rules checked once per URL in a pass (its deliveries share the webhook's URL), not
  // once per attempt: the same URL and rules give the same answer.
  const urls = new Map<string, string | InvalidInput>();
  const checkUrl = (url: string) => {
    let checked = urls.get(url);
    if (checked === undefined) {
      try {
        checked = webhookUrl(url, context.origins);
      } catch (err) {
        if (!(err instanceof InvalidInput)) throw err;
        checked = err;
      }
      urls.set(url, checked);
    }
    if (checked instanceof InvalidInput) throw checked;
    return checked;
  };
  return Promise.all(
    due.map(async (row): Promise<Dispatched> => {
      try {
        return await dispatch(row, context, connection, checkUrl, shared);
      } catch (err) {
        log('error', { msg: 'a delivery failed unexpectedly; it waits', delivery_id: row.delivery_id }, err);
        return { row, kind: 'wait' };
      }
    }),
  );
}
