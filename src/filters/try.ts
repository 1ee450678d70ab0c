// Trying a filter: the given filter (or the webhook's own) against an event, with that webhook's
// value set. Nothing is stored or sent.
import type { Context } from 'hono';
import { isEventType } from '../core/event-types';
import type { FilterEvent } from '../core/filter/match';
import { FILTER_MAX_BYTES } from '../core/filter/parse';
import { tryEvent } from '../events/filtering';
import { MAX_EVENT_BYTES } from '../events/publish';
import type { AppEnv } from '../http/app-env';
import { jsonObject, parseJsonText, readJsonBody } from '../http/body';
import { badInput, notFound, success } from '../http/envelope';
import { filterField, idField } from '../http/params';
import { withD1 } from '../http/storage';
import { inObject } from '../platform/objects';
import { getWebhook } from '../webhooks/store/reads';
import { trialJson } from './representation';

/** The event a trial matches: `{"type", "data"}` as publishing takes them (data a JSON object). */
export function trialEvent(value: unknown): FilterEvent {
  if (value === undefined) throw badInput('event is required');
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw badInput('event must be a JSON object');
  const { type, data } = value as Record<string, unknown>;
  if (!isEventType(type)) throw badInput('event.type must be 1 to 64 letters, digits, _ or .');
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw badInput('event.data must be a JSON object');
  return { type, data };
}

/**
 * POST /v1.0/app/nft/webhook/filter/test {"filter"?, "webhook_id"?, "event"}: 200 with whether
 * the event matches `filter` (when given; null: no filter) or else the webhook's own, `$in_set`
 * reading that webhook's value set (none without `webhook_id`: every lookup misses), and when it
 * does not, why. Without a filter every event matches.
 */
export async function tryFilter(c: Context<AppEnv>): Promise<Response> {
  const { bytes, value } = await readJsonBody(c.req.raw, { maxBytes: MAX_EVENT_BYTES + FILTER_MAX_BYTES });
  const body = jsonObject(value);
  const given = Object.hasOwn(body, 'filter');
  const webhookId = body.webhook_id === undefined ? null : idField(body.webhook_id);
  let filter = given ? filterField(body.filter, bytes) : null;
  // The event read again without the id reviver (its data as publishing parses it) to check it,
  // then as text with every number as sent, as publishing stores it: what the why shows.
  const text = new TextDecoder().decode(bytes);
  const { type } = trialEvent((JSON.parse(text) as Record<string, unknown>).event);
  const { data } = (parseJsonText(text, true) as { event: { data: unknown } }).event;
  const event = JSON.stringify({ type, data });
  if (!given && webhookId === null) throw badInput('filter or webhook_id is required');
  if (webhookId !== null) {
    c.set('webhookId', webhookId);
    const row = await withD1(c, 'first-primary', (db) => getWebhook(db, webhookId, c.get('appId')));
    if (row === null) throw notFound();
    if (!given) filter = row.filter;
  }
  if (filter === null) return success(c, { value: trialJson(null) });
  const chosen = filter;
  const why =
    webhookId === null
      ? tryEvent(chosen, event, () => false)
      : await inObject(() => c.env.APPLICATIONS.getByName(c.get('appId')).tryFilter(webhookId, chosen, event));
  return success(c, { value: trialJson(why) });
}
