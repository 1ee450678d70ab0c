// Publishing in the application object's database: events stored with their deliveries' ids, index
// and outbox rows, all in the caller's transaction; and where a delivery is. Delivery ids are int64,
// as decimal text.

/** A delivery still to hand over: its id and its webhook. */
export type Target = [deliveryId: string, webhookId: string];

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
export function insertEvents(sql: SqlStorage, events: EventToStore[], targets: string[][]): StoredEvent[] {
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
