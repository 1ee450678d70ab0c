import type { Context } from 'hono';
import { badInput, notFound, success } from '../http/envelope';
import type { AppEnv } from '../types';
import { type SessionStart, withD1 } from './d1';
import {
  cursorParam,
  encodeCursor,
  limitParam,
  parseBookmark,
  parseEnabledFilter,
  queryOf,
  single,
  webhookIdParam,
} from './params';
import { pageJson, webhookJson } from './representation';
import { getWebhook, listWebhooks, type PageQuery } from './store';

/** The list's query parameters, each at most once; others are ignored. */
export function pageQuery(query: URLSearchParams): PageQuery {
  const page: PageQuery = { limit: limitParam(query), after: cursorParam(query) };
  const enabled = single(query, 'is_enabled');
  if (enabled !== undefined) {
    const filter = parseEnabledFilter(enabled);
    if (filter === null) throw badInput('is_enabled must be true or false');
    page.enabled = filter;
  }
  return page;
}

/** Where a read's D1 session starts: no older than the client's bookmark, else anywhere. */
export function sessionStart(header: string | undefined): SessionStart {
  if (header === undefined) return 'first-unconstrained';
  const bookmark = parseBookmark(header);
  if (bookmark === null) throw badInput('X-D1-Bookmark is not a D1 bookmark');
  return { bookmark };
}

/**
 * GET: with `webhook_id`, that webhook of the caller's (404 when missing, deleted or another
 * application's); without it, a keyset page of the caller's webhooks, oldest first.
 */
export async function readWebhooks(c: Context<AppEnv>): Promise<Response> {
  const query = queryOf(c.req.url);
  const appId = c.get('appId');
  if (query.has('webhook_id')) {
    const webhookId = webhookIdParam(query);
    c.set('webhookId', webhookId);
    const start = sessionStart(c.req.header('x-d1-bookmark'));
    const webhook = await withD1(c, start, (db) => getWebhook(db, webhookId, appId));
    if (webhook === null) throw notFound();
    return success(c, { value: webhookJson(webhook) });
  }
  const page = pageQuery(query);
  const start = sessionStart(c.req.header('x-d1-bookmark'));
  const { webhooks, more } = await withD1(c, start, (db) => listWebhooks(db, appId, page));
  const last = webhooks[webhooks.length - 1];
  return success(c, { value: pageJson(webhooks, more && last !== undefined ? encodeCursor(last.id) : null) });
}
