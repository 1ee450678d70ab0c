import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { readJsonBody } from '../http/body';
import { success } from '../http/envelope';
import { withD1 } from '../http/storage';
import { readSubscribers } from '../webhooks/store/subscribers';
import { eventToStore, parseEvent } from './event';
import { publishersOf, publishToSubscribers } from './fan-out';
import type { EventToStore } from './store/events';

/** Largest event body accepted over HTTP, in bytes. */
export const MAX_EVENT_BYTES = 64 * 1024;

/**
 * POST /v1.0/platform/nft/event: stores the event with its deliveries in its application's object
 * and answers 202 with its id once they are stored and handed to their endpoints. Publishing an id the application's
 * events already have answers the first event's id and delivers nothing again.
 */
export async function publishEvent(c: Context<AppEnv>): Promise<Response> {
  const { value } = await readJsonBody(c.req.raw, { maxBytes: MAX_EVENT_BYTES, exactNumbers: true });
  const [eventId] = await publishEvents(c, [eventToStore(parseEvent(value), null)]);
  c.set('eventId', eventId as string);
  return success(c, { status: 202, value: `{"event_id":${JSON.stringify(eventId)}}` });
}

/**
 * Publishes events from a request: one D1 read (which webhooks receive them), then one call per
 * application to its object, which stores them with their deliveries. Returns each event's id, in order: an earlier event's
 * for an id its application published before.
 */
export async function publishEvents(c: Context<AppEnv>, events: EventToStore[]): Promise<string[]> {
  const read = await withD1(c, 'first-primary', (db) => readSubscribers(db, publishersOf(events)));
  const stored = await publishToSubscribers(c.env, events, read);
  return stored.map((s) => s.eventId);
}
