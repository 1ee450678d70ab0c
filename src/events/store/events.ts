// Publishing in the application object's database: events kept by their source keys for the
// deduplication window (store/dedupe.ts), their deliveries' ids (store/delivery-ids.ts) and the
// outbox rows, all in the caller's transaction. Delivery ids are int64, as decimal text.

import { EVENT_KEY, publishedEvent, rememberEvent } from './dedupe';
import { carriedId, endpointNumber, eventIdOf, nextDeliveryId, type Sequence } from './delivery-ids';
import { noteJourney } from './journeys';

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

/** An event whose deliveries are not all handed over yet, with those deliveries. */
export interface Handover {
  eventId: string;
  deliveries: { webhookId: string; delivery: NewDelivery }[];
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

/** What giving ids needs: the events' sequence, and the start of the deduplication window (ISO 8601). */
export interface IdState {
  sequence: Sequence;
  dedupeSince: string;
  /** Whether the events table of the releases before may still hold events (see store/dedupe.ts). */
  legacyEvents: boolean;
  /** Endpoint numbers known committed (they never change); read, not written, here. */
  numbers: ReadonlyMap<string, number>;
  /** The endpoint numbers read or given by this call: known committed once its transaction is. */
  given: Map<string, number>;
}

/** What storing an event did: its id (an earlier one's when published before), and the deliveries made now. */
export interface StoredEvent {
  eventId: string;
  /** Deliveries this call made (none when the event was published before). */
  deliveryIds: string[];
}

/**
 * Stores events with one delivery per target webhook each (`targets[i]`: the webhook ids of
 * `events[i]`), the deliveries in the outbox too. An event whose source key the application
 * published within the deduplication window is not stored again and makes no delivery: that
 * event's id is returned. The handovers it makes are pushed to `made` too (as the outbox holds
 * them). Call it in a transaction: all or nothing.
 */
export function insertEvents(
  sql: SqlStorage,
  events: EventToStore[],
  targets: string[][],
  ids: IdState,
  made: Handover[] = [],
): StoredEvent[] {
  const take = ids.sequence.begin(sql);
  const numbers = new Map<string, number | null>();
  const numberOf = (webhookId: string) => {
    let n = ids.numbers.get(webhookId) ?? numbers.get(webhookId);
    if (n === undefined) {
      n = endpointNumber(sql, webhookId);
      numbers.set(webhookId, n);
      if (n !== null) ids.given.set(webhookId, n);
    }
    return n;
  };
  let last: string | null | undefined;
  /** An id of the kind given before, with its index row (see store/delivery-ids.ts). */
  const indexedId = (webhookId: string, createdAt: string) => {
    if (last === undefined) {
      last = sql.exec<{ last: string }>(`SELECT last FROM ids WHERE name = 'delivery'`).toArray()[0]?.last ?? null;
    }
    last = nextDeliveryId(last, Date.now());
    sql.exec(
      'INSERT INTO deliveries (delivery_id, webhook_id, created_at) VALUES (CAST(?1 AS INTEGER), ?2, ?3)',
      last,
      webhookId,
      createdAt,
    );
    return last;
  };
  const stored = events.map((event, i): StoredEvent => {
    // Without a source key, the event's own id: the same event handed over again is not stored twice.
    const key = event.sourceKey ?? `${EVENT_KEY}${event.eventId}`;
    const found = publishedEvent(sql, key, event.eventId, ids.dedupeSince, ids.legacyEvents);
    if (found !== null) return { eventId: found, deliveryIds: [] };
    // Its id carries its sequence number (and so where its deliveries are): given here, once stored.
    const sequence = take();
    const eventId = sequence === null ? event.eventId : eventIdOf(sequence, event.eventId);
    rememberEvent(sql, key, eventId, event.createdAt);
    const hooks = targets[i] ?? [];
    const carried: number[] = [];
    const handover: Target[] = hooks.map((webhookId) => {
      const n = sequence === null ? null : numberOf(webhookId);
      if (sequence === null || n === null) return [indexedId(webhookId, event.createdAt), webhookId];
      carried.push(n);
      return [carriedId(sequence, n), webhookId];
    });
    if (sequence !== null && carried.length > 0) noteJourney(sql, sequence, Date.parse(event.createdAt), carried);
    if (handover.length > 0) {
      const body: Omit<NewDelivery, 'delivery_id'> = {
        event_id: eventId,
        message_id: event.messageId ?? eventId,
        app_id: event.appId,
        type: event.type,
        payload: event.payload,
        created_at: event.createdAt,
      };
      sql.exec(
        'INSERT INTO outbox (event_id, event, targets) VALUES (?1, ?2, ?3)',
        eventId,
        JSON.stringify(body),
        JSON.stringify(handover),
      );
      made.push({
        eventId,
        deliveries: handover.map(([id, webhookId]) => ({ webhookId, delivery: { delivery_id: id, ...body } })),
      });
    }
    return { eventId, deliveryIds: handover.map(([id]) => id) };
  });
  if (typeof last === 'string') {
    sql.exec(
      `INSERT INTO ids (name, last) VALUES ('delivery', ?1) ON CONFLICT (name) DO UPDATE SET last = excluded.last`,
      last,
    );
  }
  return stored;
}
