import type { Context } from 'hono';
import { deliveryConfig } from '../deliveries/config';
import { firstQueued, queueDeliveries } from '../deliveries/queue';
import { type EventToStore, storeEvents } from '../deliveries/store';
import { readJsonBody } from '../http/body';
import { success } from '../http/envelope';
import type { AppEnv } from '../types';
import { withD1 } from '../webhooks/d1';
import { eventPayload, type NewEvent, newEventId, parseEvent } from './event';

/** Largest event body accepted over HTTP, in bytes. */
export const MAX_EVENT_BYTES = 64 * 1024;

/**
 * An event as stored now. `fallbackKey` makes it idempotent when the publisher gave no id (the
 * queue message's id); null: a new event every time.
 */
export function eventToStore(event: NewEvent, fallbackKey: string | null): EventToStore {
  const createdAt = new Date().toISOString();
  return {
    eventId: newEventId(),
    appId: event.appId,
    sourceKey: event.id === undefined ? fallbackKey : `id:${event.id}`,
    type: event.type,
    payload: eventPayload(event.type, createdAt, event.data),
    createdAt,
  };
}

/**
 * POST /v1.0/platform/nft/event: stores the event with its deliveries (one D1 round trip), answers
 * 202 with its id, and queues the deliveries after the reply. Publishing an id the application's
 * events already have answers the first event's id and delivers nothing again.
 */
export async function publishEvent(c: Context<AppEnv>): Promise<Response> {
  // Invalid delivery settings fail closed here too (500 naming the setting): nothing is stored
  // that could not be delivered.
  deliveryConfig(c.env);
  const { value } = await readJsonBody(c.req.raw, { maxBytes: MAX_EVENT_BYTES, exactNumbers: true });
  const event = eventToStore(parseEvent(value), null);
  const [stored] = await withD1(c, 'first-primary', (db) => storeEvents(db, [event]));
  const { eventId, deliveryIds } = stored as { eventId: string; deliveryIds: string[] };
  c.set('eventId', eventId);
  if (deliveryIds.length > 0) c.executionCtx.waitUntil(queueDeliveries(c.env, firstQueued(deliveryIds)));
  return success(c, { status: 202, value: `{"event_id":${JSON.stringify(eventId)}}` });
}
