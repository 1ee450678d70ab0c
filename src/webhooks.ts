import type { Context } from 'hono';
import { withD1 } from './d1';
import { notFound, requestId, success } from './envelope';
import { readUpdate, webhookIdFromQuery } from './input';
import { type Actor, deleteWebhook, setWebhookEnabled, webhookExists } from './store';
import type { AppEnv } from './types';

/** Both operations share one path and differ by method (spec §4). */
export const WEBHOOK_PATH = '/v1.0/app/nft/webhook';

const actorOf = (c: Context<AppEnv>): Actor => ({
  appId: c.get('appId'),
  jti: c.get('jti'),
  requestId: requestId(c),
});

/** PUT: set the active state; without `is_enabled`, only confirm the webhook is the caller's. */
export async function updateWebhook(c: Context<AppEnv>): Promise<Response> {
  const { webhookId, isEnabled } = await readUpdate(c.req.raw);
  c.set('webhookId', webhookId);
  const found =
    isEnabled === undefined
      ? await withD1(c, (db) => webhookExists(db, webhookId, c.get('appId')))
      : await withD1(c, (db) => setWebhookEnabled(db, webhookId, isEnabled, actorOf(c)));
  if (!found) throw notFound();
  return success(c);
}

/** DELETE: remove the webhook named by the `webhook_id` query parameter. */
export async function removeWebhook(c: Context<AppEnv>): Promise<Response> {
  const webhookId = webhookIdFromQuery(c.req.url);
  c.set('webhookId', webhookId);
  if (!(await withD1(c, (db) => deleteWebhook(db, webhookId, actorOf(c))))) throw notFound();
  return success(c);
}
