// The Durable Objects: an endpoint's deliveries and attempts, and an application's events, read and
// written in their own storage; an endpoint's sending run on demand (what its alarm does).
import { env, runInDurableObject } from 'cloudflare:test';
import { deliveryConfig } from '../../src/core/delivery-settings';
import type { SendSchedule } from '../../src/core/send-rate';
import { type Notices, type Ordering, sendDue } from '../../src/deliveries/send';
import { insertDeliveries, rememberWebhook } from '../../src/deliveries/store/sending';
import { rememberEndpoints } from '../../src/events/store/endpoints';
import { allowedOrigins } from '../../src/webhooks/url';

export const endpointOf = (webhookId: string) => env.ENDPOINTS.getByName(webhookId);
export const applicationOf = (appId: string) => env.APPLICATIONS.getByName(appId);

/** Runs a statement in the object's own SQLite database; returns its rows. */
function objectSql<T>(stub: DurableObjectStub, query: string, params: SqlStorageValue[]): Promise<T[]> {
  return runInDurableObject(stub, (_instance, state) => state.storage.sql.exec(query, ...params).toArray()) as Promise<
    T[]
  >;
}

/** Runs a statement in the endpoint's own SQLite database; returns its rows. */
export const endpointSql = <T = Record<string, SqlStorageValue>>(
  webhookId: string,
  query: string,
  ...params: SqlStorageValue[]
) => objectSql<T>(endpointOf(webhookId), query, params);

/** Runs a statement in the application's own SQLite database; returns its rows. */
export const applicationSql = <T = Record<string, SqlStorageValue>>(
  appId: string,
  query: string,
  ...params: SqlStorageValue[]
) => objectSql<T>(applicationOf(appId), query, params);

/** Sends what is due at these endpoints now, one after the other, as their alarms would. */
export async function deliverDue(...webhookIds: string[]): Promise<void> {
  for (const id of webhookIds) await endpointOf(id).deliverDue();
}

export interface StoredDelivery {
  delivery_id: string;
  event_id: string;
  message_id: string;
  status: string;
  attempts: number;
  schedule_start: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  payload: string;
  type: string;
  created_at: string;
}

/** A delivery as its endpoint's object stores it, or undefined. */
export async function storedDelivery(webhookId: string, deliveryId: string): Promise<StoredDelivery | undefined> {
  const [row] = await endpointSql<StoredDelivery>(
    webhookId,
    `SELECT CAST(delivery_id AS TEXT) AS delivery_id, event_id, message_id, status, attempts, schedule_start,
       next_attempt_at, last_attempt_at, last_status, last_error, payload, type, created_at
     FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER)`,
    deliveryId,
  );
  return row;
}

/** The endpoint's deliveries of one event (their ids), oldest first. */
export async function deliveriesOfEvent(webhookId: string, eventId: string): Promise<string[]> {
  const rows = await endpointSql<{ id: string }>(
    webhookId,
    'SELECT CAST(delivery_id AS TEXT) AS id FROM deliveries WHERE event_id = ?1 ORDER BY delivery_id',
    eventId,
  );
  return rows.map((r) => r.id);
}

export interface StoredAttempt {
  attempt: number;
  attempted_at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  body: string | null;
}

/** A delivery's recorded attempts, oldest first. */
export const storedAttempts = (webhookId: string, deliveryId: string) =>
  endpointSql<StoredAttempt>(
    webhookId,
    `SELECT attempt, attempted_at, status, error, duration_ms, body FROM delivery_attempts
     WHERE delivery_id = CAST(?1 AS INTEGER) ORDER BY attempt`,
    deliveryId,
  );

/** Makes a delivery look as if it had failed `attempts` times (by default as many as it has) and is due now. */
export const makeDue = (webhookId: string, deliveryId: string, attempts?: number) =>
  endpointSql(
    webhookId,
    `UPDATE deliveries SET attempts = COALESCE(?2, attempts), next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
     WHERE delivery_id = CAST(?1 AS INTEGER)`,
    deliveryId,
    attempts ?? null,
  );

let seq = 0;

/**
 * `count` deliveries stored at the webhook's endpoint, due now, as its application's object hands
 * them over (noting the endpoint) but without setting the alarm: only the passes the test runs send them.
 */
export async function pendingAt(webhookId: string, appId: string, count: number): Promise<string[]> {
  const now = new Date().toISOString();
  const base = (BigInt(Date.now() - 1_577_836_800_000) << 20n) + BigInt(++seq * 1000);
  const ids = Array.from({ length: count }, (_, i) => String(base + BigInt(i)));
  // The application notes the endpoint as its handover does (a change of the webhook is then told to it).
  await runInDurableObject(applicationOf(appId), (_instance, state) =>
    rememberEndpoints(state.storage.sql, [webhookId]),
  );
  await runInDurableObject(endpointOf(webhookId), (_instance, state) => {
    rememberWebhook(state.storage.sql, webhookId);
    insertDeliveries(
      state.storage.sql,
      ids.map((id) => ({
        delivery_id: id,
        event_id: `evt_${id}`,
        message_id: `evt_${id}`,
        app_id: appId,
        type: 'NEW_NFT',
        payload: '{}',
        created_at: now,
      })),
    );
  });
  return ids;
}

/** The schedule the endpoint's object keeps (its own, across passes and alarms). */
export const scheduleOf = (instance: unknown) => (instance as { schedule: SendSchedule }).schedule;
/** The changes of its webhook the endpoint's object was told of (what a pass checks). */
const noticesOf = (instance: unknown) => (instance as { notices: Notices }).notices;
/** Whether its webhook was FIFO when a pass last read it. */
const orderingOf = (instance: unknown) => (instance as { ordering: Ordering }).ordering;

/**
 * One sending pass of the webhook's endpoint, in its object, with its own schedule and these
 * settings (the test env's, with `settings` changed); returns when the object should send again.
 */
export function sendPass(webhookId: string, settings: Record<string, string> = {}): Promise<number | null> {
  return runInDurableObject(endpointOf(webhookId), (instance, state) => {
    const bindings = { ...env, ...settings } as CloudflareBindings;
    return sendDue(
      {
        webhookId,
        storage: state.storage,
        schedule: scheduleOf(instance),
        notices: noticesOf(instance),
        ordering: orderingOf(instance),
      },
      bindings,
      { config: deliveryConfig(bindings), origins: allowedOrigins(bindings) },
      (input, init) => fetch(input, init),
    );
  });
}

/**
 * Rings the endpoint's alarm with these settings (the test env's, changed), as its object's own,
 * archiving included whenever it is due by them.
 */
export async function alarmWith(webhookId: string, settings: Record<string, unknown>): Promise<void> {
  await runInDurableObject(endpointOf(webhookId), async (instance) => {
    const object = instance as unknown as { env: object; archiveAt: number; alarm(): Promise<void> };
    const own = object.env;
    // An alarm under the test's own settings already said when archiving has work next (by them).
    object.archiveAt = 0;
    Object.defineProperty(object, 'env', { value: { ...env, ...settings }, configurable: true, writable: true });
    try {
      await object.alarm();
    } finally {
      Object.defineProperty(object, 'env', { value: own, configurable: true, writable: true });
    }
  });
}
