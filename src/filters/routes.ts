import type { Context, Next } from 'hono';
import type { HonoBase } from 'hono/hono-base';
import { authenticate, requireWrite } from '../auth/bearer';
import { log } from '../core/log';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitApplication } from '../http/limits';
import { mountPath } from '../http/operations';
import { tryFilter } from './try';
import { editValues, readValues } from './values';

export const VALUES_PATH = '/v1.0/app/nft/webhook/values';
export const FILTER_TEST_PATH = '/v1.0/app/nft/webhook/filter/test';

/** What an application does with its webhooks' filters: their value sets (a change needs a token that may write), trials. */
export function mountFilters(app: HonoBase<AppEnv>) {
  const guarded = [authenticate, limitApplication];
  const writing = [authenticate, requireWrite, limitApplication];
  mountPath(app, VALUES_PATH, {
    GET: { name: 'values', code: Code.queryFail, handlers: [...guarded, readValues] },
    POST: { name: 'edit-values', code: Code.updateFail, handlers: [...writing, editValues] },
  });
  mountPath(app, FILTER_TEST_PATH, {
    POST: { name: 'filter-test', code: Code.queryFail, handlers: [...guarded, tryFilter] },
  });
}

/**
 * A step of DELETE on the webhook path, before its handler: once the webhook is deleted (200),
 * its value set is deleted at its application's object. The reply is DELETE's as it was: should
 * the object fail, the set stays behind, unreachable (a webhook id is never given again, and only
 * an existing webhook's set is read), and a log line says so.
 */
export async function deleteValueSet(c: Context<AppEnv>, next: Next): Promise<void> {
  await next();
  if (c.res.status !== 200) return;
  const webhookId = c.get('webhookId');
  try {
    const rows = await c.env.APPLICATIONS.getByName(c.get('appId')).dropValues(webhookId);
    if (rows > 0) log('info', { msg: 'value set deleted with its webhook', webhook_id: webhookId, rows });
  } catch (err) {
    log('error', { msg: 'could not delete a deleted webhook value set; it stays unread', webhook_id: webhookId }, err);
  }
}
