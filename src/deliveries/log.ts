import type { Context } from 'hono';
import { isEventType } from '../core/event-types';
import { DELIVERY_CURSOR } from '../core/pages';
import type { AppEnv } from '../http/app-env';
import { badInput, notFound, success } from '../http/envelope';
import { cursorParam, idParam, limitParam, queryOf, single } from '../http/params';
import { sessionStart } from '../http/storage';
import { inObject } from '../platform/objects';
import { ownedEndpoint } from './owned';
import { deliveryJson, deliveryPageJson } from './representation';
import type { DeliveryPageQuery } from './store/log';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'];

/** The log's query parameters, each at most once; others are ignored. */
export function deliveryPageQuery(query: URLSearchParams): DeliveryPageQuery {
  const page: DeliveryPageQuery = { limit: limitParam(query), before: cursorParam(query, DELIVERY_CURSOR) };
  const status = single(query, 'status');
  if (status !== undefined) {
    if (!DELIVERY_STATUSES.includes(status)) throw badInput(`status must be one of ${DELIVERY_STATUSES.join(', ')}`);
    page.status = status;
  }
  const type = single(query, 'type');
  if (type !== undefined) {
    if (!isEventType(type)) throw badInput('type must be 1 to 64 letters, digits, _ or .');
    page.type = type;
  }
  return page;
}

/**
 * GET /v1.0/app/nft/webhook/delivery: with `delivery_id`, that delivery of the caller's with its
 * attempt log (its application's object says which endpoint holds it); with `webhook_id`, a
 * keyset page of that webhook's deliveries, newest first (the webhook's ownership read in D1, in
 * a session that reads the client's writes when it sends its bookmark). Foreign and missing are
 * one 404.
 */
export async function readDeliveries(c: Context<AppEnv>): Promise<Response> {
  const query = queryOf(c.req.url);
  const appId = c.get('appId');
  if (query.has('delivery_id')) {
    const deliveryId = idParam(query, 'delivery_id');
    // Answered by the objects alone (no D1, so no X-D1-Bookmark back); a malformed bookmark is
    // still the 400 it is on every read.
    sessionStart(c.req.header('x-d1-bookmark'));
    const missing = () => notFound('no such delivery for this application');
    const webhookId = await inObject(() => c.env.APPLICATIONS.getByName(appId).locate(deliveryId));
    if (webhookId === null) throw missing();
    const found = await inObject(() => c.env.ENDPOINTS.getByName(webhookId).get(deliveryId, appId));
    if (found === null) throw missing();
    return success(c, { value: deliveryJson(found.delivery, found.attempts) });
  }
  if (!query.has('webhook_id')) throw badInput('webhook_id or delivery_id is required');
  const webhookId = idParam(query);
  c.set('webhookId', webhookId);
  const page = deliveryPageQuery(query);
  const start = sessionStart(c.req.header('x-d1-bookmark'));
  const endpoint = await ownedEndpoint(c, webhookId, { start });
  const found = await inObject(() => endpoint.list(page));
  return success(c, { value: deliveryPageJson(found.rows, found.next) });
}
