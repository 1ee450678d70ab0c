// What sending does in the endpoint object's database: deliveries handed over, the due ones read,
// attempts and new states recorded, failed ones recovered. Every call is a synchronous statement
// on the object's storage. Delivery ids are int64 and travel as decimal text (CAST in SQL), never
// doubles.
import type { NewDelivery } from '../../events/store/events';

export type { NewDelivery };

/** The webhook this object is the endpoint of (stored with its first delivery), or null. */
export function endpointWebhook(sql: SqlStorage): string | null {
  const [row] = sql.exec<{ value: string }>(`SELECT value FROM endpoint WHERE key = 'webhook_id'`).toArray();
  return row?.value ?? null;
}

export function rememberWebhook(sql: SqlStorage, webhookId: string): void {
  sql.exec(`INSERT OR IGNORE INTO endpoint (key, value) VALUES ('webhook_id', ?)`, webhookId);
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
 * Stores new deliveries, due at their creation; one already here (a handover repeated) is left
 * as it is. Returns how many were new.
 */
export function insertDeliveries(sql: SqlStorage, deliveries: NewDelivery[]): number {
  // One statement per delivery: cheaper than one over JSON rows, whose every column would parse
  // the row's JSON (its payload included) again.
  let added = 0;
  for (const d of deliveries) {
    added += sql
      .exec(
        `INSERT OR IGNORE INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, next_attempt_at, created_at)
         VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7, ?7)
         RETURNING delivery_id`,
        d.delivery_id,
        d.event_id,
        d.message_id,
        d.app_id,
        d.type,
        d.payload,
        d.created_at,
      )
      .toArray().length;
  }
  return added;
}

/** Records attempts (one statement for them all); one recorded already (a repeat) is left as it was. */
export function insertAttempts(sql: SqlStorage, attempts: AttemptRecord[]): void {
  if (attempts.length === 0) return;
  sql.exec(
    `INSERT OR IGNORE INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
     SELECT a.id, a.attempt, a.at, a.status, a.error, a.ms, a.body FROM (
       SELECT CAST(json_extract(value, '$.delivery_id') AS INTEGER) AS id, json_extract(value, '$.attempt') AS attempt,
         json_extract(value, '$.attempted_at') AS at, json_extract(value, '$.status') AS status,
         json_extract(value, '$.error') AS error, json_extract(value, '$.duration_ms') AS ms,
         json_extract(value, '$.body') AS body
       FROM json_each(?1)) AS a
     WHERE EXISTS (SELECT 1 FROM deliveries WHERE delivery_id = a.id)`,
    JSON.stringify(attempts),
  );
}

/** A pending delivery as the sender reads it here. */
export interface DueDelivery {
  delivery_id: string;
  status: string;
  attempts: number;
  schedule_start: number;
  next_attempt_at: string | null;
  app_id: string;
  /** What receivers see as `webhook-id`. */
  message_id: string;
  payload: string;
}

/** A due delivery of an enabled webhook, with what the webhook (in D1) says about sending it. */
export interface DeliveryToAttempt extends DueDelivery {
  webhook_id: string;
  url: string;
  /** The signing secrets, sealed; `secret` null for a webhook from before secrets, until it gets one. */
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: string | null;
}

const DUE_COLUMNS = `CAST(delivery_id AS TEXT) AS delivery_id, status, attempts, schedule_start, next_attempt_at,
  app_id, message_id, payload`;

/** Pending deliveries due by `until`, the longest waiting first, at most `limit`. */
export function dueDeliveries(sql: SqlStorage, until: string, limit: number): DueDelivery[] {
  return sql
    .exec<DueDelivery & Record<string, SqlStorageValue>>(
      `SELECT ${DUE_COLUMNS}
       FROM deliveries
       WHERE status = 'pending' AND next_attempt_at <= ?1
       ORDER BY next_attempt_at, delivery_id
       LIMIT ?2`,
      until,
      limit,
    )
    .toArray();
}

/**
 * The head of a FIFO endpoint: its oldest pending delivery (the oldest era's smallest id, see
 * store/delivery-ids.ts: this release's ids, from 2^52 to 2^53, are younger than the wider ones
 * of the release before), or undefined when none is pending. Read through the index of pending
 * deliveries, so the deliveries that ended are never scanned.
 */
export function headDelivery(sql: SqlStorage): DueDelivery | undefined {
  const [head] = sql
    .exec<DueDelivery & Record<string, SqlStorageValue>>(
      `SELECT ${DUE_COLUMNS}
       FROM deliveries INDEXED BY deliveries_due
       WHERE status = 'pending'
       ORDER BY delivery_id BETWEEN 4503599627370496 AND 9007199254740991, delivery_id
       LIMIT 1`,
    )
    .toArray();
  return head;
}

/**
 * When the endpoint has work next (ms), or null when none is pending: when the earliest pending
 * delivery is due, or, for a FIFO endpoint (`fifo`), when its head is.
 */
export function nextDue(sql: SqlStorage, fifo = false): number | null {
  if (fifo) {
    const at = headDelivery(sql)?.next_attempt_at;
    return at == null ? null : Date.parse(at);
  }
  const [row] = sql
    .exec<{ at: string | null }>(`SELECT MIN(next_attempt_at) AS at FROM deliveries WHERE status = 'pending'`)
    .toArray();
  return row?.at == null ? null : Date.parse(row.at);
}

/**
 * A delivery's new state. Applied only while it is still pending with `expected` attempts, so a
 * state is never recorded twice.
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

/** Records attempts and the deliveries' new states, all or nothing. */
export function recordDeliveries(
  storage: DurableObjectStorage,
  attempts: AttemptRecord[],
  changes: DeliveryChange[],
): void {
  storage.transactionSync(() => {
    insertAttempts(storage.sql, attempts);
    if (changes.length === 0) return;
    // One statement for every change of the pass.
    storage.sql.exec(
      `UPDATE deliveries
       SET status = c.to_status, attempts = c.to_attempts, next_attempt_at = c.next_at,
         last_attempt_at = COALESCE(c.at, last_attempt_at),
         last_status = CASE WHEN c.at IS NULL THEN last_status ELSE c.reply END,
         last_error = CASE WHEN c.at IS NULL THEN last_error ELSE c.why END
       FROM (
         SELECT CAST(json_extract(value, '$[0]') AS INTEGER) AS id, json_extract(value, '$[1]') AS expected,
           json_extract(value, '$[2]') AS to_status, json_extract(value, '$[3]') AS to_attempts,
           json_extract(value, '$[4]') AS next_at, json_extract(value, '$[5]') AS at,
           json_extract(value, '$[6]') AS reply, json_extract(value, '$[7]') AS why
         FROM json_each(?1)) AS c
       WHERE deliveries.delivery_id = c.id AND deliveries.status = 'pending' AND deliveries.attempts = c.expected`,
      JSON.stringify(
        changes.map((c) => [
          c.delivery_id,
          c.expected,
          c.status,
          c.attempts,
          c.next_attempt_at,
          c.attempt?.at ?? null,
          c.attempt?.status ?? null,
          c.attempt?.error ?? null,
        ]),
      ),
    );
  });
}

/**
 * Makes every `failed` delivery created in [since, until) pending again, due `now`, with the retry
 * schedule starting over (attempts keep counting). Returns their ids.
 */
export function recoverDeliveries(sql: SqlStorage, since: string, until: string, now: string): string[] {
  return sql
    .exec<{ id: string }>(
      `UPDATE deliveries SET status = 'pending', schedule_start = attempts, next_attempt_at = ?3
       WHERE status = 'failed' AND created_at >= ?1 AND created_at < ?2
       RETURNING CAST(delivery_id AS TEXT) AS id`,
      since,
      until,
      now,
    )
    .toArray()
    .map((r) => r.id);
}
