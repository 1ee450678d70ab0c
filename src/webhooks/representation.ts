// How the API writes webhooks (in `value`): the one place that turns store rows into JSON.
import type { WebhookRow } from './store';

/**
 * A webhook object. The id is the store's decimal text spliced in as a JSON integer, so its
 * exact int64 digits are written (never a double's); the other fields go through JSON.stringify.
 */
export function webhookJson(row: WebhookRow): string {
  return `{"webhook_id":${row.id},"url":${JSON.stringify(row.url)},"is_enabled":${row.is_enabled === 1},"created_at":${JSON.stringify(row.created_at)},"updated_at":${JSON.stringify(row.updated_at)}}`;
}

/** A list page: the webhooks and the cursor of the next page (null on the last). */
export function pageJson(rows: WebhookRow[], nextCursor: string | null): string {
  const next = nextCursor === null ? 'null' : JSON.stringify(nextCursor);
  return `{"webhooks":[${rows.map(webhookJson).join(',')}],"next_cursor":${next}}`;
}
