import type { Context } from 'hono';
import { eventToStore, publishedType } from '../events/event';
import { publishAtApplications } from '../events/fan-out';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { success } from '../http/envelope';
import { idField } from '../http/params';
import { ownedEndpoint } from './owned';

/** The type of a test event when the request names none. */
export const TEST_EVENT_TYPE = 'webhook.test';

/**
 * POST /v1.0/app/nft/webhook/test {"webhook_id", "type"?}: one event with `data: {}` to that
 * webhook only (its `event_types` do not apply), delivered, signed, retried and recorded like any
 * other. 202 with the event's and the delivery's ids; a disabled webhook is 409; a type that
 * publishing refuses (an operational type among them) is 400.
 */
export async function sendTestEvent(c: Context<AppEnv>): Promise<Response> {
  const { webhook_id: raw, type: named = TEST_EVENT_TYPE } = jsonObject((await readJsonBody(c.req.raw)).value);
  const webhookId = idField(raw);
  const type = publishedType(named);
  c.set('webhookId', webhookId);
  await ownedEndpoint(c, webhookId, { enabled: true });
  const event = eventToStore({ appId: c.get('appId'), type, data: '{}' }, null);
  const [stored] = await publishAtApplications(c.env, [event], [[webhookId]]);
  // The id it was stored under (which carries where its delivery is).
  const eventId = stored?.eventId ?? event.eventId;
  c.set('eventId', eventId);
  return success(c, {
    status: 202,
    value: `{"event_id":${JSON.stringify(eventId)},"delivery_id":${stored?.deliveryIds[0]}}`,
  });
}
