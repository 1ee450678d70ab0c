// An application's events, in its Durable Object's own SQLite database: every event it published
// (its source key makes publishing idempotent), the index of its deliveries (which endpoint holds
// each), and the outbox of deliveries not yet handed to their endpoints' objects (one row per
// event: its body once, and the deliveries still to hand over). The bodies live with the
// deliveries, in the endpoints' objects. Delivery ids are int64, as decimal text.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  event_id   TEXT PRIMARY KEY,
  source_key TEXT UNIQUE,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_by_age ON events (created_at);
CREATE TABLE IF NOT EXISTS deliveries (
  delivery_id INTEGER PRIMARY KEY,
  webhook_id  TEXT    NOT NULL,
  created_at  TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_by_age ON deliveries (created_at);
CREATE TABLE IF NOT EXISTS outbox (
  event_id TEXT PRIMARY KEY,
  event    TEXT NOT NULL,
  targets  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ids (name TEXT PRIMARY KEY, last TEXT NOT NULL) WITHOUT ROWID;
`;

export function migrateApplication(sql: SqlStorage): void {
  sql.exec(SCHEMA);
}

/** A new delivery, as made here and handed to its endpoint's object: due at once. */
export interface NewDelivery {
  delivery_id: string;
  /** The event it delivers. */
  event_id: string;
  /** What receivers see as `webhook-id`: a resend's original event id, else `event_id`. */
  message_id: string;
  app_id: string;
  type: string;
  /** The exact body every attempt sends. */
  payload: string;
  created_at: string;
}

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
  /** What receivers see as `webhook-id` when it is not `eventId`: a resend's original event. */
  messageId?: string;
}

/** What storing an event did: its id (an earlier one's when published before), and the deliveries made now. */
export interface StoredEvent {
  eventId: string;
  /** Deliveries this call made (none when the event was published before). */
  deliveryIds: string[];
}

// Delivery ids: milliseconds since 2020 times 2^12, plus 12 random bits, and always above the last
// one this application was given, so they are unique in the application, sort by creation, lie far
// above the ids D1 gave deliveries before they moved here (which keep theirs), and stay below 2^53
// until 2089: a client that reads JSON numbers as doubles still gets them exactly.
const EPOCH_MS = 1_577_836_800_000n;
const RANDOM_BITS = 12n;

/** The next delivery id after `last` (decimal text; null: none yet), at `now`. */
export function nextDeliveryId(last: string | null, now: number): string {
  const random = BigInt(crypto.getRandomValues(new Uint32Array(1))[0] as number) & ((1n << RANDOM_BITS) - 1n);
  const fresh = ((BigInt(now) - EPOCH_MS) << RANDOM_BITS) | random;
  const after = last === null ? 0n : BigInt(last) + 1n;
  return (fresh > after ? fresh : after).toString();
}

/**
 * Stores events with one delivery per target webhook each (`targets[i]`: the webhook ids of
 * `events[i]`), the deliveries in the outbox too. An event whose id or source key the application
 * has already is not stored again and makes no delivery: its first id is returned. Call it in a
 * transaction: all or nothing.
 */
export function storeEvents(sql: SqlStorage, events: EventToStore[], targets: string[][]): StoredEvent[] {
  const [last] = sql.exec<{ last: string }>(`SELECT last FROM ids WHERE name = 'delivery'`).toArray();
  let lastId = last?.last ?? null;
  const stored = events.map((event, i): StoredEvent => {
    const [found] = sql
      .exec<{ event_id: string }>(
        'SELECT event_id FROM events WHERE event_id = ?1 OR source_key = ?2 LIMIT 1',
        event.eventId,
        event.sourceKey,
      )
      .toArray();
    if (found !== undefined) return { eventId: found.event_id, deliveryIds: [] };
    sql.exec(
      'INSERT INTO events (event_id, source_key, created_at) VALUES (?1, ?2, ?3)',
      event.eventId,
      event.sourceKey,
      event.createdAt,
    );
    const handover: Target[] = (targets[i] ?? []).map((webhookId) => {
      lastId = nextDeliveryId(lastId, Date.now());
      sql.exec(
        'INSERT INTO deliveries (delivery_id, webhook_id, created_at) VALUES (CAST(?1 AS INTEGER), ?2, ?3)',
        lastId,
        webhookId,
        event.createdAt,
      );
      return [lastId, webhookId];
    });
    if (handover.length > 0) {
      const body: Omit<NewDelivery, 'delivery_id'> = {
        event_id: event.eventId,
        message_id: event.messageId ?? event.eventId,
        app_id: event.appId,
        type: event.type,
        payload: event.payload,
        created_at: event.createdAt,
      };
      sql.exec(
        'INSERT INTO outbox (event_id, event, targets) VALUES (?1, ?2, ?3)',
        event.eventId,
        JSON.stringify(body),
        JSON.stringify(handover),
      );
    }
    return { eventId: event.eventId, deliveryIds: handover.map(([id]) => id) };
  });
  if (lastId !== null) {
    sql.exec(
      `INSERT INTO ids (name, last) VALUES ('delivery', ?1) ON CONFLICT (name) DO UPDATE SET last = excluded.last`,
      lastId,
    );
  }
  return stored;
}

/** A delivery still to hand over: its id and its webhook. */
type Target = [deliveryId: string, webhookId: string];

/** An event whose deliveries are not all handed over yet, with those deliveries. */
export interface Handover {
  eventId: string;
  deliveries: { webhookId: string; delivery: NewDelivery }[];
}

/**
 * The outbox: at most `limit` events with deliveries still to hand over, only those of `eventIds`
 * when given (a publish hands over its own, the alarm all).
 */
export function outbox(sql: SqlStorage, limit: number, eventIds?: string[]): Handover[] {
  return sql
    .exec<{ event_id: string; event: string; targets: string }>(
      `SELECT event_id, event, targets FROM outbox
       WHERE ?2 IS NULL OR event_id IN (SELECT value FROM json_each(?2))
       LIMIT ?1`,
      limit,
      eventIds === undefined ? null : JSON.stringify(eventIds),
    )
    .toArray()
    .map((row) => {
      const body = JSON.parse(row.event) as Omit<NewDelivery, 'delivery_id'>;
      const targets = JSON.parse(row.targets) as Target[];
      const deliveries = targets.map(([id, webhookId]) => ({ webhookId, delivery: { delivery_id: id, ...body } }));
      return { eventId: row.event_id, deliveries };
    });
}

/**
 * What is left of the handovers once the webhooks of `failed` could not take theirs: an event
 * with nothing left leaves the outbox, the others keep only those.
 */
export function handedOver(sql: SqlStorage, handovers: Handover[], failed: ReadonlySet<string>): void {
  for (const h of handovers) {
    const left: Target[] = h.deliveries
      .filter((d) => failed.has(d.webhookId))
      .map((d) => [d.delivery.delivery_id, d.webhookId]);
    if (left.length === 0) sql.exec('DELETE FROM outbox WHERE event_id = ?1', h.eventId);
    else if (left.length < h.deliveries.length) {
      sql.exec('UPDATE outbox SET targets = ?2 WHERE event_id = ?1', h.eventId, JSON.stringify(left));
    }
  }
}

export const outboxEmpty = (sql: SqlStorage) =>
  sql.exec<{ n: number }>('SELECT EXISTS (SELECT 1 FROM outbox) AS n').one().n === 0;

/** Which webhook's endpoint holds the delivery, or null when the application has none such. */
export function webhookOf(sql: SqlStorage, deliveryId: string): string | null {
  const [row] = sql
    .exec<{ webhook_id: string }>(
      'SELECT webhook_id FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER)',
      deliveryId,
    )
    .toArray();
  return row?.webhook_id ?? null;
}

/** An event moved from D1, and the deliveries it had there. */
export interface MovedEvent {
  event_id: string;
  source_key: string | null;
  created_at: string;
}

/** Events and the index of deliveries moved from D1; what is here already stays as it is. */
export function insertMovedEvents(
  sql: SqlStorage,
  events: MovedEvent[],
  deliveries: { delivery_id: string; webhook_id: string; created_at: string }[],
): void {
  for (const e of events) {
    sql.exec(
      'INSERT OR IGNORE INTO events (event_id, source_key, created_at) VALUES (?1, ?2, ?3)',
      e.event_id,
      e.source_key,
      e.created_at,
    );
  }
  for (const d of deliveries) {
    sql.exec(
      'INSERT OR IGNORE INTO deliveries (delivery_id, webhook_id, created_at) VALUES (CAST(?1 AS INTEGER), ?2, ?3)',
      d.delivery_id,
      d.webhook_id,
      d.created_at,
    );
  }
}

/** Deletes events and index rows created before `before`, at most `limit` of each; returns how many. */
export function purgeEvents(storage: DurableObjectStorage, before: string, limit: number): number {
  return storage.transactionSync(() => {
    const { sql } = storage;
    const events = sql.exec(
      `DELETE FROM events WHERE event_id IN (
         SELECT event_id FROM events WHERE created_at < ?1 ORDER BY created_at LIMIT ?2) RETURNING 1`,
      before,
      limit,
    );
    const deliveries = sql.exec(
      `DELETE FROM deliveries WHERE delivery_id IN (
         SELECT delivery_id FROM deliveries WHERE created_at < ?1 ORDER BY created_at LIMIT ?2) RETURNING 1`,
      before,
      limit,
    );
    return events.toArray().length + deliveries.toArray().length;
  });
}

/** When the oldest event was stored (ms), or null when there is none. */
export function oldestEvent(sql: SqlStorage): number | null {
  const [row] = sql.exec<{ at: string | null }>('SELECT MIN(created_at) AS at FROM events').toArray();
  return row?.at == null ? null : Date.parse(row.at);
}
