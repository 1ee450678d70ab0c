import type { Context } from 'hono';
import { newEventId } from '../events/event';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { conflict, notFound, success } from '../http/envelope';
import { idField } from '../http/params';
import { withD1 } from '../http/storage';
import { firstQueued, queueDeliveries } from '../platform/queues';
import { resendDelivery } from './store/resend';

/**
 * POST /v1.0/app/nft/webhook/delivery/resend {"delivery_id"}: a new delivery of the same event to
 * the same webhook (the same body and `webhook-id`; its `event_types` do not apply; whatever state
 * the old delivery is in), on a fresh schedule. 202 with the new delivery's id; a disabled webhook
 * is 409; a missing or foreign delivery, or one whose webhook is deleted, 404.
 */
export async function resend(c: Context<AppEnv>): Promise<Response> {
  const deliveryId = idField(jsonObject((await readJsonBody(c.req.raw)).value).delivery_id, 'delivery_id');
  // One event id for this request's write, the same in every retry of its batch.
  const eventId = newEventId();
  const now = new Date().toISOString();
  const result = await withD1(c, 'first-primary', (db) => resendDelivery(db, deliveryId, c.get('appId'), eventId, now));
  if (result.outcome === 'missing') throw notFound('no such delivery for this application');
  if (result.outcome === 'disabled') throw conflict('the webhook is disabled');
  c.set('webhookId', result.webhookId);
  c.set('eventId', eventId);
  c.executionCtx.waitUntil(queueDeliveries(c.env, firstQueued([result.deliveryId])));
  return success(c, { status: 202, value: `{"delivery_id":${result.deliveryId}}` });
}
