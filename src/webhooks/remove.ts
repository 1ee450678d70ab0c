import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { notFound, success } from '../http/envelope';
import { idParam, queryOf } from '../http/params';
import { withD1 } from '../http/storage';
import { actorOf } from './actor';
import { tellApplication } from './notify';
import { deleteWebhook } from './store/state';

/** DELETE: remove the webhook named by the `webhook_id` query parameter. */
export async function removeWebhook(c: Context<AppEnv>): Promise<Response> {
  const webhookId = idParam(queryOf(c.req.url));
  c.set('webhookId', webhookId);
  const { gone, auditId } = await withD1(c, 'first-primary', (db) => deleteWebhook(db, webhookId, actorOf(c)));
  if (!gone) throw notFound();
  await tellApplication(c, webhookId, { auditId, sending: true, deleted: true });
  return success(c);
}
