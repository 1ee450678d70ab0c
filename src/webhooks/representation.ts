// How the API writes webhooks: the one place that turns store rows into JSON.
import { destinationJson, headersJson, shownUrl } from './destination';
import type { WebhookRow } from './store/rows';

/**
 * A webhook object. The id is the store's decimal text spliced in as a JSON integer, so its
 * exact int64 digits are written (never a double's); the other fields go through JSON.stringify.
 */
export function webhookJson(row: WebhookRow): string {
  return `{"webhook_id":${row.id},"url":${JSON.stringify(shownUrl(row.url, row.destination))},"destination":${destinationJson(row.destination)},"headers":${headersJson(row.headers)},"is_enabled":${row.is_enabled === 1},"event_types":${row.event_types ?? 'null'},"description":${row.description === null ? 'null' : JSON.stringify(row.description)},"rate_limit":${row.rate_limit ?? 'null'},"filter":${row.filter ?? 'null'},"ordering":${row.ordering === null ? 'null' : JSON.stringify(row.ordering)},"created_at":${JSON.stringify(row.created_at)},"updated_at":${JSON.stringify(row.updated_at)},${healthJson(row)}}`;
}

const text = (value: string | null) => (value === null ? 'null' : JSON.stringify(value));

/**
 * Why and since when it is disabled (both null while it is enabled: a reason left by a release
 * that did not write them is never shown on an enabled webhook), and since when it is failing.
 */
function healthJson(row: WebhookRow): string {
  const disabled = row.is_enabled !== 1;
  return `"disabled_reason":${text(disabled ? row.disabled_reason : null)},"disabled_at":${text(disabled ? row.disabled_at : null)},"failing_since":${text(row.failing_since)}`;
}

/**
 * The webhook object of POST's 201 (and its replay): the only reply that shows a webhook with its
 * signing secret. A replay of a key stored before webhooks had secrets has none.
 */
export function createdWebhookJson(row: WebhookRow, secret: string | null): string {
  const webhook = webhookJson(row);
  return secret === null ? webhook : `${webhook.slice(0, -1)},"secret":${JSON.stringify(secret)}}`;
}

/** The `value` of a signing secret's reply. */
export const secretJson = (secret: string) => `{"secret":${JSON.stringify(secret)}}`;

/** A list page: the webhooks and the cursor of the next page (null on the last). */
export function pageJson(rows: WebhookRow[], nextCursor: string | null): string {
  const next = nextCursor === null ? 'null' : JSON.stringify(nextCursor);
  return `{"webhooks":[${rows.map(webhookJson).join(',')}],"next_cursor":${next}}`;
}
