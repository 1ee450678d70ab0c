// All SQL of events and deliveries. Every function is one D1 round trip (one batch, which D1 runs
// as a transaction). Delivery and webhook ids travel as decimal text (CAST in SQL), never doubles.
import { AUDIT_COLUMNS, type Db, NOW, ROW_JSON } from '../webhooks/store';
import type { QueuedDelivery } from './queue';

// ---- fan-out --------------------------------------------------------------------------------------

/** An event to store, with what its deliveries need. */
export interface EventToStore {
  eventId: string;
  appId: string;
  /** 'id:' + the publisher's id, or 'msg:' + the queue message's id; null: always a new event. */
  sourceKey: string | null;
  type: string;
  /** The exact body every attempt sends. */
  payload: string;
  /** When it is stored (ISO 8601 UTC): the payload's timestamp. */
  createdAt: string;
}

/** What storing an event did: its id (an earlier one's when published before), and the deliveries made now. */
export interface StoredEvent {
  eventId: string;
  /** Deliveries this call made (none when the event was published before). */
  deliveryIds: string[];
}

/**
 * Stores events, each with one pending delivery per enabled webhook of its application whose
 * `event_types` is null or names its type, as they stand now; all in one batch. An event whose
 * source key its application published before is not stored again and makes no delivery.
 * Safe to retry: a repeat of a committed batch (same event ids) finds its own event and
 * deliveries. (A queue message redelivered after its batch committed makes new event ids: it
 * finds the event by its source key and queues nothing; the Cron Trigger queues what is left.)
 */
export async function storeEvents(db: Db, events: EventToStore[]): Promise<StoredEvent[]> {
  const statements = events.flatMap((e) => [
    db
      .prepare(
        `INSERT OR IGNORE INTO events (event_id, app_id, source_key, type, payload, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
      )
      .bind(e.eventId, e.appId, e.sourceKey, e.type, e.payload, e.createdAt),
    db
      .prepare(
        `INSERT OR IGNORE INTO deliveries (event_id, webhook_id, app_id, next_attempt_at, created_at)
         SELECT ?1, webhook_id, app_id, ?4, ?4
         FROM webhooks
         WHERE app_id = ?2 AND is_enabled = 1
           AND (event_types IS NULL OR EXISTS (SELECT 1 FROM json_each(webhooks.event_types) WHERE value = ?3))
           AND EXISTS (SELECT 1 FROM events WHERE event_id = ?1)
         ORDER BY webhook_id`,
      )
      .bind(e.eventId, e.appId, e.type, e.createdAt),
    db
      .prepare(
        `SELECT COALESCE(
           (SELECT event_id FROM events WHERE event_id = ?1),
           (SELECT event_id FROM events WHERE app_id = ?2 AND source_key = ?3)) AS event_id,
           (SELECT json_group_array(CAST(delivery_id AS TEXT)) FROM deliveries WHERE event_id = ?1) AS deliveries`,
      )
      .bind(e.eventId, e.appId, e.sourceKey),
  ]);
  const results = await db.batch<{ event_id: string | null; deliveries: string }>(statements);
  return events.map((_event, i) => {
    const row = results[i * 3 + 2]?.results[0];
    if (row?.event_id == null) throw new Error('publish: the event was neither stored nor found');
    return { eventId: row.event_id, deliveryIds: JSON.parse(row.deliveries) as string[] };
  });
}

// ---- the consumer ---------------------------------------------------------------------------------

/** A delivery as the consumer needs it: its state, its event's body, its webhook (null fields when gone). */
export interface DeliveryToAttempt {
  delivery_id: string;
  status: string;
  attempts: number;
  schedule_start: number;
  queue_gen: number;
  next_attempt_at: string | null;
  webhook_id: string;
  app_id: string;
  event_id: string;
  payload: string;
  url: string | null;
  is_enabled: number | null;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: string | null;
}

/** The deliveries of a batch of queue messages, with their events and webhooks, in one statement. */
export async function loadDeliveries(db: Db, deliveryIds: string[]): Promise<DeliveryToAttempt[]> {
  const { results } = await db
    .prepare(
      `SELECT CAST(d.delivery_id AS TEXT) AS delivery_id, d.status, d.attempts, d.schedule_start, d.queue_gen,
         d.next_attempt_at, CAST(d.webhook_id AS TEXT) AS webhook_id, d.app_id, e.event_id, e.payload,
         w.url, w.is_enabled, w.secret, w.previous_secret, w.previous_secret_until
       FROM deliveries AS d
       JOIN events AS e ON e.event_id = d.event_id
       LEFT JOIN webhooks AS w ON w.webhook_id = d.webhook_id AND w.app_id = d.app_id
       WHERE d.delivery_id IN (SELECT CAST(value AS INTEGER) FROM json_each(?1))`,
    )
    .bind(JSON.stringify(deliveryIds))
    .all<DeliveryToAttempt>();
  return results;
}

/** One attempt as recorded. */
export interface AttemptRecord {
  delivery_id: string;
  attempt: number;
  attempted_at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  body: string | null;
}

/**
 * A delivery's new state. Applied only while it is still pending with `expected` attempts, so a
 * duplicate queue message never records twice.
 */
export interface DeliveryChange {
  delivery_id: string;
  expected: number;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: string | null;
  /** The attempt made now (its time, status, error); null when none was made. */
  attempt: { at: string; status: number | null; error: string | null } | null;
}

/** A webhook's health after this batch's attempts: `ok` when one succeeded. */
export interface HealthChange {
  webhook_id: string;
  ok: boolean;
  /** The first failure's time in this batch. */
  at: string;
}

/**
 * A webhook to disable if it still qualifies: it answered 410 Gone, or its first failure since
 * its last success is no later than `cutoff`.
 */
export interface DisableCandidate {
  webhook_id: string;
  gone: boolean;
  cutoff: string;
  request_id: string;
}

/**
 * Records a consumer batch in one batch: every attempt, every delivery's new state, the webhooks'
 * health, and the webhooks the service disables, each with its audit record (actor 'system',
 * with the reason).
 */
export async function recordBatch(
  db: Db,
  attempts: AttemptRecord[],
  changes: DeliveryChange[],
  health: HealthChange[],
  disable: DisableCandidate[],
): Promise<void> {
  const statements: D1PreparedStatement[] = [];
  if (attempts.length > 0) {
    statements.push(
      db
        .prepare(
          `INSERT OR IGNORE INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
           SELECT CAST(json_extract(value, '$.delivery_id') AS INTEGER), json_extract(value, '$.attempt'),
             json_extract(value, '$.attempted_at'), json_extract(value, '$.status'), json_extract(value, '$.error'),
             json_extract(value, '$.duration_ms'), json_extract(value, '$.body')
           FROM json_each(?1)
           WHERE EXISTS (SELECT 1 FROM deliveries WHERE delivery_id = CAST(json_extract(value, '$.delivery_id') AS INTEGER))`,
        )
        .bind(JSON.stringify(attempts)),
    );
  }
  if (changes.length > 0) {
    statements.push(
      db
        .prepare(
          `UPDATE deliveries
           SET status = c.new_status, attempts = c.new_attempts, next_attempt_at = c.next_at,
             last_attempt_at = COALESCE(c.at, last_attempt_at),
             last_status = CASE WHEN c.at IS NULL THEN last_status ELSE c.http_status END,
             last_error = CASE WHEN c.at IS NULL THEN last_error ELSE c.error_kind END
           FROM (SELECT CAST(json_extract(value, '$.delivery_id') AS INTEGER) AS id,
                   json_extract(value, '$.expected') AS expected, json_extract(value, '$.status') AS new_status,
                   json_extract(value, '$.attempts') AS new_attempts, json_extract(value, '$.next_attempt_at') AS next_at,
                   json_extract(value, '$.attempt.at') AS at, json_extract(value, '$.attempt.status') AS http_status,
                   json_extract(value, '$.attempt.error') AS error_kind
                 FROM json_each(?1)) AS c
           WHERE deliveries.delivery_id = c.id AND deliveries.status = 'pending' AND deliveries.attempts = c.expected`,
        )
        .bind(JSON.stringify(changes)),
    );
  }
  if (health.length > 0) {
    statements.push(
      db
        .prepare(
          `UPDATE webhooks
           SET failing_since = CASE WHEN h.ok THEN NULL ELSE COALESCE(webhooks.failing_since, h.at) END
           FROM (SELECT CAST(json_extract(value, '$.webhook_id') AS INTEGER) AS id, json_extract(value, '$.ok') AS ok,
                   json_extract(value, '$.at') AS at
                 FROM json_each(?1)) AS h
           WHERE webhooks.webhook_id = h.id
             AND CASE WHEN h.ok THEN webhooks.failing_since IS NOT NULL ELSE webhooks.failing_since IS NULL END`,
        )
        .bind(JSON.stringify(health)),
    );
  }
  if (disable.length > 0) {
    const candidates = `(SELECT CAST(json_extract(value, '$.webhook_id') AS INTEGER) AS id,
        json_extract(value, '$.gone') AS gone, json_extract(value, '$.cutoff') AS cutoff,
        json_extract(value, '$.request_id') AS request_id
      FROM json_each(?1)) AS d`;
    const qualifies = `webhooks.is_enabled = 1 AND (d.gone OR webhooks.failing_since <= d.cutoff)`;
    statements.push(
      db
        .prepare(
          `INSERT INTO webhook_audit (${AUDIT_COLUMNS}, reason)
           SELECT webhooks.webhook_id, webhooks.app_id, 'disable', ${ROW_JSON}, 'system', NULL, d.request_id,
             CASE WHEN d.gone THEN 'the endpoint answered 410 Gone'
               ELSE 'every attempt failed since ' || webhooks.failing_since END
           FROM webhooks JOIN ${candidates} ON webhooks.webhook_id = d.id
           WHERE ${qualifies}`,
        )
        .bind(JSON.stringify(disable)),
      db
        .prepare(
          `UPDATE webhooks SET is_enabled = 0, updated_at = ${NOW}
           FROM ${candidates}
           WHERE webhooks.webhook_id = d.id AND ${qualifies}`,
        )
        .bind(JSON.stringify(disable)),
    );
  }
  if (statements.length > 0) await db.batch(statements);
}

// ---- the Cron Trigger -----------------------------------------------------------------------------

/**
 * Pending deliveries whose next attempt is due since `overdueSince` or earlier (their queue
 * message was lost, or the Worker died mid-batch), at most `limit`: marked due `now` (so the
 * next run does not take them again before they are overdue once more), in a new queue
 * generation (the lost message, should it turn up, is then dropped), and returned.
 */
export async function takeOverdue(db: Db, overdueSince: string, now: string, limit: number): Promise<QueuedDelivery[]> {
  const { results } = await db
    .prepare(
      `UPDATE deliveries SET next_attempt_at = ?2, queue_gen = queue_gen + 1
       WHERE delivery_id IN (
         SELECT delivery_id FROM deliveries
         WHERE status = 'pending' AND next_attempt_at <= ?1
         ORDER BY next_attempt_at LIMIT ?3)
       RETURNING CAST(delivery_id AS TEXT) AS id, queue_gen AS gen`,
    )
    .bind(overdueSince, now, limit)
    .all<QueuedDelivery>();
  return results;
}

/**
 * Deletes deliveries created before `before` that have ended, with their attempts, then the events
 * left without deliveries, at most `limit` of each per call; returns how many rows went. A
 * delivery still pending (recovered late in its life) stays until it ends.
 */
export async function purgeOldDeliveries(db: Db, before: string, limit: number): Promise<number> {
  const old = `SELECT delivery_id FROM deliveries
    WHERE created_at < ?1 AND status <> 'pending' ORDER BY created_at, delivery_id LIMIT ?2`;
  const results = await db.batch([
    db.prepare(`DELETE FROM delivery_attempts WHERE delivery_id IN (${old})`).bind(before, limit),
    db.prepare(`DELETE FROM deliveries WHERE delivery_id IN (${old})`).bind(before, limit),
    db
      .prepare(
        `DELETE FROM events WHERE event_id IN (
           SELECT event_id FROM events
           WHERE created_at < ?1 AND NOT EXISTS (SELECT 1 FROM deliveries WHERE deliveries.event_id = events.event_id)
           ORDER BY created_at LIMIT ?2)`,
      )
      .bind(before, limit),
  ]);
  return results.reduce((n, r) => n + r.meta.changes, 0);
}

// ---- the delivery log -----------------------------------------------------------------------------

/** A delivery as the log shows it. */
export interface DeliveryRow {
  delivery_id: string;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
}

/** One recorded attempt, as the log shows it. */
export type AttemptRow = Omit<AttemptRecord, 'delivery_id'>;

const DELIVERY_COLUMNS = `CAST(d.delivery_id AS TEXT) AS delivery_id, d.event_id, e.type, d.status, d.attempts,
  d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error, d.created_at`;
const OWNED_WEBHOOK = 'SELECT 1 FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2';

export interface DeliveryPageQuery {
  /** Only deliveries older than this one (the cursor's); undefined for the first page. */
  before?: string;
  status?: string;
  limit: number;
}

/**
 * A keyset page of one webhook's deliveries, newest (largest id) first, and whether more follow;
 * null when the application has no such webhook. One round trip.
 */
export async function listDeliveries(
  db: Db,
  webhookId: string,
  appId: string,
  { before, status, limit }: DeliveryPageQuery,
): Promise<{ deliveries: DeliveryRow[]; more: boolean } | null> {
  const [owned, page] = await db.batch<Record<string, unknown>>([
    db.prepare(`SELECT EXISTS (${OWNED_WEBHOOK}) AS found`).bind(webhookId, appId),
    db
      .prepare(
        `SELECT ${DELIVERY_COLUMNS}
         FROM deliveries AS d JOIN events AS e ON e.event_id = d.event_id
         WHERE d.webhook_id = CAST(?1 AS INTEGER) AND d.app_id = ?2
           AND (?3 IS NULL OR d.delivery_id < CAST(?3 AS INTEGER)) AND (?4 IS NULL OR d.status = ?4)
           AND EXISTS (${OWNED_WEBHOOK})
         ORDER BY d.delivery_id DESC
         LIMIT ?5`,
      )
      .bind(webhookId, appId, before ?? null, status ?? null, limit + 1),
  ]);
  if (owned?.results[0]?.found !== 1) return null;
  const rows = (page?.results ?? []) as unknown as DeliveryRow[];
  const more = rows.length > limit;
  return { deliveries: more ? rows.slice(0, limit) : rows, more };
}

/** One delivery of the application with every attempt, oldest first; null when it has none such. One round trip. */
export async function getDelivery(
  db: Db,
  deliveryId: string,
  appId: string,
): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] } | null> {
  const owned = 'd.delivery_id = CAST(?1 AS INTEGER) AND d.app_id = ?2';
  const [delivery, attempts] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `SELECT ${DELIVERY_COLUMNS} FROM deliveries AS d JOIN events AS e ON e.event_id = d.event_id WHERE ${owned}`,
      )
      .bind(deliveryId, appId),
    db
      .prepare(
        `SELECT a.attempt, a.attempted_at, a.status, a.error, a.duration_ms, a.body
         FROM delivery_attempts AS a JOIN deliveries AS d ON d.delivery_id = a.delivery_id
         WHERE ${owned}
         ORDER BY a.attempt`,
      )
      .bind(deliveryId, appId),
  ]);
  const row = delivery?.results[0] as unknown as DeliveryRow | undefined;
  if (row === undefined) return null;
  return { delivery: row, attempts: (attempts?.results ?? []) as unknown as AttemptRow[] };
}

// ---- test events and recovery ---------------------------------------------------------------------

/** What a test event found: no such webhook, a disabled one, or the delivery it made. */
export type TestEventOutcome =
  | { outcome: 'missing' }
  | { outcome: 'disabled' }
  | { outcome: 'queued'; deliveryId: string };

/**
 * Stores a test event for one webhook of the application, with its one delivery (its
 * `event_types` do not apply), if the webhook exists and is enabled. One batch; safe to retry.
 */
export async function storeTestEvent(db: Db, webhookId: string, event: EventToStore): Promise<TestEventOutcome> {
  const enabled = `SELECT 1 FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2 AND is_enabled = 1`;
  const [, , facts] = await db.batch<{ enabled: number | null; delivery_id: string | null }>([
    db
      .prepare(
        `INSERT OR IGNORE INTO events (event_id, app_id, source_key, type, payload, created_at)
         SELECT ?3, ?2, NULL, ?4, ?5, ?6 WHERE EXISTS (${enabled})`,
      )
      .bind(webhookId, event.appId, event.eventId, event.type, event.payload, event.createdAt),
    db
      .prepare(
        `INSERT OR IGNORE INTO deliveries (event_id, webhook_id, app_id, next_attempt_at, created_at)
         SELECT ?3, webhook_id, app_id, ?4, ?4 FROM webhooks
         WHERE webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2 AND is_enabled = 1
           AND EXISTS (SELECT 1 FROM events WHERE event_id = ?3)`,
      )
      .bind(webhookId, event.appId, event.eventId, event.createdAt),
    db
      .prepare(
        `SELECT (SELECT is_enabled FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2) AS enabled,
           (SELECT CAST(delivery_id AS TEXT) FROM deliveries WHERE event_id = ?3) AS delivery_id`,
      )
      .bind(webhookId, event.appId, event.eventId),
  ]);
  const row = facts?.results[0];
  if (row?.delivery_id != null) return { outcome: 'queued', deliveryId: row.delivery_id };
  return row?.enabled == null ? { outcome: 'missing' } : { outcome: 'disabled' };
}

/** What a recovery found: no such webhook, a disabled one, or the deliveries it made pending again. */
export type RecoverOutcome =
  | { outcome: 'missing' }
  | { outcome: 'disabled' }
  | { outcome: 'recovered'; deliveries: QueuedDelivery[] };

/**
 * Makes every `failed` delivery of the application's webhook created in [since, until) pending
 * again, due now, with the retry schedule starting over (attempts keep counting), marked with
 * `recoveryId` (the same in every retry of the request's batch). One statement does it, so two
 * racing recoveries never take the same delivery. Only for an enabled webhook.
 */
export async function recoverDeliveries(
  db: Db,
  webhookId: string,
  appId: string,
  since: string,
  until: string,
  now: string,
  recoveryId: string,
): Promise<RecoverOutcome> {
  const window = 'webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2 AND created_at >= ?3 AND created_at < ?4';
  const [, recovered, facts] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `UPDATE deliveries
         SET status = 'pending', schedule_start = attempts, next_attempt_at = ?5, queue_gen = queue_gen + 1,
           recovery_id = ?6
         WHERE ${window} AND status = 'failed' AND EXISTS (${OWNED_WEBHOOK} AND is_enabled = 1)`,
      )
      .bind(webhookId, appId, since, until, now, recoveryId),
    // What this recovery made pending (found again should a retry of this batch run after its
    // first attempt committed) and that no attempt has taken since.
    db
      .prepare(
        `SELECT CAST(delivery_id AS TEXT) AS id, queue_gen AS gen FROM deliveries
         WHERE webhook_id = CAST(?1 AS INTEGER) AND recovery_id = ?2 AND status = 'pending'
           AND schedule_start = attempts`,
      )
      .bind(webhookId, recoveryId),
    db
      .prepare(
        `SELECT (SELECT is_enabled FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2) AS enabled`,
      )
      .bind(webhookId, appId),
  ]);
  const enabled = facts?.results[0]?.enabled;
  if (enabled == null) return { outcome: 'missing' };
  if (enabled !== 1) return { outcome: 'disabled' };
  return { outcome: 'recovered', deliveries: (recovered?.results ?? []) as unknown as QueuedDelivery[] };
}
