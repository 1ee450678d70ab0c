import type { Context } from 'hono';
import { newEventId } from '../events/event';
import { publishAtApplications } from '../events/fan-out';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { notFound, success } from '../http/envelope';
import { idField } from '../http/params';
import { inObject } from '../platform/objects';
import { ownedEndpoint } from './owned';

/**
 * POST /v1.0/app/nft/webhook/delivery/resend {"delivery_id"}: a new delivery of the same event to
 * the same webhook (the same body and `webhook-id`; its `event_types` do not apply; whatever state
 * the old delivery is in), on a fresh schedule. 202 with the new delivery's id; a disabled webhook
 * is 409; a missing or foreign delivery, or one whose webhook is deleted, 404. The resend is a new
 * event of the application (its own event_id, no source key) that receivers see as the original.
 */
export async function resend(c: Context<AppEnv>): Promise<Response> {
  const deliveryId = idField(jsonObject((await readJsonBody(c.req.raw)).value).delivery_id, 'delivery_id');
  const appId = c.get('appId');
  const missing = () => notFound('no such delivery for this application');
  const webhookId = await inObject(() => c.env.APPLICATIONS.getByName(appId).locate(deliveryId));
  if (webhookId === null) throw missing();
  // The delivery is read before the webhook: an id names its endpoint whether or not the delivery
  // exists, and a missing one is 404 whatever its webhook's state.
  const original = await inObject(() => c.env.ENDPOINTS.getByName(webhookId).eventOf(deliveryId, appId));
  if (original === null) throw missing();
  await ownedEndpoint(c, webhookId, { enabled: true, missing });
  const createdAt = new Date().toISOString();
  const event = {
    eventId: newEventId(),
    appId,
    sourceKey: null,
    type: original.type,
    payload: original.payload,
    createdAt,
    messageId: original.message_id,
  };
  const [stored] = await publishAtApplications(c.env, [event], [[webhookId]]);
  c.set('webhookId', webhookId);
  c.set('eventId', stored?.eventId ?? event.eventId);
  return success(c, { status: 202, value: `{"delivery_id":${stored?.deliveryIds[0]}}` });
}
