import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { notFound, success } from '../http/envelope';
import { eventIdParam, queryOf } from '../http/params';
import { sessionStart } from '../http/storage';
import { inObject } from '../platform/objects';
import { eventJourneyJson } from './representation';

/**
 * GET /v1.0/app/nft/event?event_id=evt_…: the event and its delivery to each endpoint it went to,
 * while those deliveries are kept (hot or archived). The application's object says where they are
 * (the id carries its sequence number); each endpoint's object reads its own, and a delivery
 * counts only if it is this event's. Another application's event, one no longer kept and one
 * never published are one 404.
 */
export async function readEventJourney(c: Context<AppEnv>): Promise<Response> {
  const eventId = eventIdParam(queryOf(c.req.url));
  const appId = c.get('appId');
  // Answered by the objects alone; a malformed bookmark is still the 400 it is on every read.
  sessionStart(c.req.header('x-d1-bookmark'));
  const missing = () => notFound('no such event for this application');
  const places = await inObject(() => c.env.APPLICATIONS.getByName(appId).journey(eventId));
  if (places === null) throw missing();
  const found = await Promise.all(
    places.map(async ({ webhookId, deliveryId }) => {
      const read = await inObject(() => c.env.ENDPOINTS.getByName(webhookId).get(deliveryId, appId));
      return read !== null && read.delivery.event_id === eventId ? { webhookId, delivery: read.delivery } : null;
    }),
  );
  const kept = found.filter((d) => d !== null);
  if (kept.length === 0) throw missing();
  return success(c, { value: eventJourneyJson(eventId, kept) });
}
