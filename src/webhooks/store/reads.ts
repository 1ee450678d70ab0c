// Reading webhooks (GET): one of the application's, or a keyset page of them. One round trip each.
import { type Page, pageOf, WEBHOOK_CURSOR } from '../../core/pages';
import type { Db } from '../../platform/d1';
import { COLUMNS, OWNED, type WebhookRow } from './rows';

/** One webhook of the application, or null when it has no such webhook. */
export function getWebhook(db: Db, webhookId: string, appId: string): Promise<WebhookRow | null> {
  return db.prepare(`SELECT ${COLUMNS} FROM webhooks WHERE ${OWNED}`).bind(webhookId, appId).first<WebhookRow>();
}

export interface PageQuery {
  /** Only webhooks with a greater id (the cursor's); undefined for the first page. */
  after?: string;
  /** Only enabled (true) or disabled (false) webhooks; undefined for all. */
  enabled?: boolean;
  limit: number;
}

/**
 * A keyset page of the application's webhooks, oldest (smallest id) first, with the cursor of
 * the next page.
 */
export async function listWebhooks(
  db: Db,
  appId: string,
  { after, enabled, limit }: PageQuery,
): Promise<Page<WebhookRow>> {
  const { results } = await db
    .prepare(
      `SELECT ${COLUMNS}
       FROM webhooks
       WHERE app_id = ?1 AND webhook_id > CAST(?2 AS INTEGER) AND (?3 IS NULL OR is_enabled = ?3)
       ORDER BY webhook_id
       LIMIT ?4`,
    )
    .bind(appId, after ?? '0', enabled === undefined ? null : enabled ? 1 : 0, limit + 1)
    .all<WebhookRow>();
  return pageOf(results, limit, (row) => row.id, WEBHOOK_CURSOR);
}

/** Whether the application has the webhook, and whether it is enabled: null when it has no such webhook. */
export async function webhookState(db: Db, webhookId: string, appId: string): Promise<{ enabled: boolean } | null> {
  const row = await db
    .prepare(`SELECT is_enabled FROM webhooks WHERE ${OWNED}`)
    .bind(webhookId, appId)
    .first<{ is_enabled: number }>();
  return row === null ? null : { enabled: row.is_enabled === 1 };
}

/** What sending to a webhook needs: where, with which secrets, how fast, whether at all. */
export interface SendingRow {
  app_id: string;
  url: string;
  is_enabled: number;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: string | null;
  rate_limit: number | null;
  /** The first failure since the last success (null while healthy). */
  failing_since: string | null;
  /** 'fifo': one delivery at a time, in order; null: none. */
  ordering: string | null;
  /** Where it delivers, as stored (credentials sealed); null: an HTTP endpoint, its `url`. */
  destination: string | null;
  /** Its custom headers, as stored (sensitive values sealed); null: none. */
  headers: string | null;
}

/** The webhook as sending needs it, or null when it is gone. */
export function sendingRow(db: Db, webhookId: string): Promise<SendingRow | null> {
  return db
    .prepare(
      `SELECT app_id, url, is_enabled, secret, previous_secret, previous_secret_until, rate_limit, failing_since,
         ordering, destination, headers
       FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)`,
    )
    .bind(webhookId)
    .first<SendingRow>();
}
