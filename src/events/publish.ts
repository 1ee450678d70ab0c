import type { Context } from 'hono';
import { deliveryConfig } from '../core/delivery-settings';
import type { AppEnv } from '../http/app-env';
import { readJsonBody } from '../http/body';
import { success } from '../http/envelope';
import { withD1 } from '../http/storage';
import { firstQueued, queueDeliveries } from '../platform/queues';
import { eventToStore, parseEvent } from './event';
import { type EventToStore, storeEvents } from './store';

/** Largest event body accepted over HTTP, in bytes. */
export const MAX_EVENT_BYTES = 64 * 1024;

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
  const [eventId] = await storePublished(c, [eventToStore(parseEvent(value), null)]);
  c.set('eventId', eventId as string);
  return success(c, { status: 202, value: `{"event_id":${JSON.stringify(eventId)}}` });
}

/**
 * Stores published events with their deliveries (one D1 round trip) and queues the deliveries
 * after the reply. Returns each event's id, in order: an earlier event's for an id its
 * application published before.
 */
export async function storePublished(c: Context<AppEnv>, events: EventToStore[]): Promise<string[]> {
  const stored = await withD1(c, 'first-primary', (db) => storeEvents(db, events));
  const deliveryIds = stored.flatMap((s) => s.deliveryIds);
  if (deliveryIds.length > 0) c.executionCtx.waitUntil(queueDeliveries(c.env, firstQueued(deliveryIds)));
  return stored.map((s) => s.eventId);
}
