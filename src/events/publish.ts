import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { readJsonBody } from '../http/body';
import { success } from '../http/envelope';
import { withD1 } from '../http/storage';
import { firstQueued, queueDeliveries } from '../platform/queues';
import { eventToStore, parseEvent } from './event';
import { storeEvents } from './store';

/** Largest event body accepted over HTTP, in bytes. */
export const MAX_EVENT_BYTES = 64 * 1024;

/**
 * POST /v1.0/platform/nft/event: stores the event with its deliveries (one D1 round trip), answers
 * 202 with its id, and queues the deliveries after the reply. Publishing an id the application's
 * events already have answers the first event's id and delivers nothing again.
 */
export async function publishEvent(c: Context<AppEnv>): Promise<Response> {
  const { value } = await readJsonBody(c.req.raw, { maxBytes: MAX_EVENT_BYTES, exactNumbers: true });
  const event = eventToStore(parseEvent(value), null);
  const [stored] = await withD1(c, 'first-primary', (db) => storeEvents(db, [event]));
  const { eventId, deliveryIds } = stored as { eventId: string; deliveryIds: string[] };
  c.set('eventId', eventId);
  if (deliveryIds.length > 0) c.executionCtx.waitUntil(queueDeliveries(c.env, firstQueued(deliveryIds)));
  return success(c, { status: 202, value: `{"event_id":${JSON.stringify(eventId)}}` });
}
