// Operational events: made by the service itself when something happens to one of an
// application's endpoints (disabled, failing, recovered, a delivery exhausted, a secret rotated),
// in that application's stream, and delivered like any event: to the application's enabled
// webhooks whose `event_types` name the type (a webhook with null `event_types` takes every
// published type, but none of these), never to the webhook the event is about, each through its
// content filter if it has one. With OPERATIONAL_WEBHOOK_URL set, the platform's endpoint object
// also gets each one, with `app_id` in its data.
import type { OperationalType } from '../core/event-types';
import { log } from '../core/log';
import { operationalWanted, PLATFORM_ENDPOINT } from '../core/operational-settings';
import { retryD1 } from '../platform/d1';
import { shownUrl } from '../webhooks/destination';
import { readSubscribersAbout } from '../webhooks/store/subscribers';
import { filtersOf } from './audience';
import { eventPayload, eventToStore } from './event';
import { publishAtApplications } from './fan-out';

/**
 * One operational event: its application, the webhook it is about, its type and data (a `url` of
 * null is the webhook's URL, read with the webhooks that hear of it).
 */
export interface OperationalEvent {
  appId: string;
  webhookId: string;
  type: OperationalType;
  data: Record<string, unknown>;
}

/** How the events are published: at their application's object (by default through its stub). */
export type Publisher = typeof publishAtApplications;

/**
 * Makes and delivers the events. Never throws: a failure is a log line (the cause, such as the
 * webhook's state, stays as it is; only the word about it is lost).
 */
export async function emitOperational(
  env: CloudflareBindings,
  events: OperationalEvent[],
  publish: Publisher = publishAtApplications,
): Promise<void> {
  for (const event of events) {
    try {
      await emitOne(env, event, publish);
    } catch (err) {
      log('error', { msg: 'could not make an operational event', type: event.type, webhook_id: event.webhookId }, err);
    }
  }
}

/**
 * `data` as JSON, its int64 ids (`webhook_id`, `delivery_id`, decimal text here) written as JSON
 * integers with their exact digits, as the API writes them.
 */
export const dataJson = (data: Record<string, unknown>) =>
  JSON.stringify(data).replace(/"(webhook_id|delivery_id)":"(\d+)"/g, '"$1":$2');

async function emitOne(env: CloudflareBindings, event: OperationalEvent, publish: Publisher): Promise<void> {
  const { appId, webhookId, type } = event;
  const about = await retryD1(() => readSubscribersAbout(env.DB, appId, webhookId));
  const url = about.url === null ? null : shownUrl(about.url, about.destination);
  const data = event.data.url === null ? { ...event.data, url } : event.data;
  const subscribers = about.subscribers.filter(
    (s) =>
      s.webhook_id !== webhookId && s.event_types !== null && (JSON.parse(s.event_types) as string[]).includes(type),
  );
  const stored = eventToStore({ appId, type, data: dataJson(data) }, null);
  const targets = subscribers.map((s) => s.webhook_id);
  const [kept] = await publish(env, [stored], [targets], filtersOf(subscribers));
  // The id it was stored under (which carries where its deliveries are), the platform's copy's too.
  const eventId = kept?.eventId ?? stored.eventId;
  log('info', { msg: 'operational event made', type, webhook_id: webhookId, event_id: eventId });
  if (!operationalWanted(env)) return;
  // The platform's copy: the same event id and timestamp, `app_id` added to its data.
  await env.ENDPOINTS.getByName(PLATFORM_ENDPOINT).handOverOperational({
    event_id: eventId,
    message_id: eventId,
    app_id: appId,
    type,
    payload: eventPayload(type, stored.createdAt, dataJson({ ...data, app_id: appId })),
    created_at: stored.createdAt,
  });
}
