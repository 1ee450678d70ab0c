import type { Context } from 'hono';
import { WEBHOOK_CURSOR } from '../core/pages';
import type { AppEnv } from '../http/app-env';
import { badInput, notFound, success } from '../http/envelope';
import { cursorParam, idParam, limitParam, parseEnabledFilter, queryOf, single } from '../http/params';
import { sessionStart, withD1 } from '../http/storage';
import { pageJson, webhookJson } from './representation';
import { getWebhook, listWebhooks, type PageQuery } from './store/reads';

/** The list's query parameters, each at most once; others are ignored. */
export function pageQuery(query: URLSearchParams): PageQuery {
  const page: PageQuery = { limit: limitParam(query), after: cursorParam(query, WEBHOOK_CURSOR) };
  const enabled = single(query, 'is_enabled');
  if (enabled !== undefined) {
    const filter = parseEnabledFilter(enabled);
    if (filter === null) throw badInput('is_enabled must be true or false');
    page.enabled = filter;
  }
  return page;
}

/**
 * GET: with `webhook_id`, that webhook of the caller's (404 when missing, deleted or another
 * application's); without it, a keyset page of the caller's webhooks, oldest first.
 */
export async function readWebhooks(c: Context<AppEnv>): Promise<Response> {
  const query = queryOf(c.req.url);
  const appId = c.get('appId');
  if (query.has('webhook_id')) {
    const webhookId = idParam(query);
    c.set('webhookId', webhookId);
    const start = sessionStart(c.req.header('x-d1-bookmark'));
    const webhook = await withD1(c, start, (db) => getWebhook(db, webhookId, appId));
    if (webhook === null) throw notFound();
    return success(c, { value: webhookJson(webhook) });
  }
  const page = pageQuery(query);
  const start = sessionStart(c.req.header('x-d1-bookmark'));
  const { rows, next } = await withD1(c, start, (db) => listWebhooks(db, appId, page));
  return success(c, { value: pageJson(rows, next) });
}
