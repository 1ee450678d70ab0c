import type { Context } from 'hono';
import { notFound, success } from '../http/envelope';
import type { AppEnv } from '../types';
import { actorOf } from './actor';
import { withD1 } from './d1';
import { queryOf, webhookIdParam } from './params';
import { deleteWebhook } from './store';

/** DELETE: remove the webhook named by the `webhook_id` query parameter. */
export async function removeWebhook(c: Context<AppEnv>): Promise<Response> {
  const webhookId = webhookIdParam(queryOf(c.req.url));
  c.set('webhookId', webhookId);
  if (!(await withD1(c, 'first-primary', (db) => deleteWebhook(db, webhookId, actorOf(c))))) throw notFound();
  return success(c);
}
