// The Durable Objects: an endpoint's deliveries and attempts, and an application's events, read and
// written in their own storage; an endpoint's sending run on demand (what its alarm does).
import { env, runInDurableObject } from 'cloudflare:test';

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
