// PATCH: the fields given changed, and nothing else, with an `update` audit record (the row
// before) in the same batch, which D1 runs as a transaction. One round trip.
import type { Db } from '../../platform/d1';
import { type Actor, AUDIT_COLUMNS, auditIdOf, COLUMNS, NOW, OWNED, ROW_JSON, type WebhookRow } from './rows';

/** What a PATCH sets: each field present only when the body gave it (null is a value to set). */
export interface WebhookPatch {
  /** Normalised. */
  url?: string;
  /** JSON text of the event types; null: every type. */
  eventTypes?: string | null;
  rateLimit?: number | null;
  description?: string | null;
  /** The filter's JSON text as sent; null: none. */
  filter?: string | null;
  /** 'fifo' or null (none). */
  ordering?: 'fifo' | null;
  /**
   * The destination as stored (null: an HTTP endpoint); without "sealed", the stored credentials
   * are kept (only when the type stays the same). `url` is then its address.
   */
  destination?: string | null;
  /** The custom headers as stored; null: none. */
  headers?: string | null;
}

export type PatchOutcome =
  | { outcome: 'missing' }
  /** Another of the application's webhooks has the URL: nothing changed. */
  | { outcome: 'duplicate' }
  /** The patch does not fit the webhook's destination as stored: nothing changed. */
  | { outcome: 'invalid'; reason: 'credentials' | 'url-not-http' | 'url-required' }
  /** The webhook as it stands now; `changed`: this call changed it (and recorded that, `auditId`). */
  | { outcome: 'patched'; webhook: WebhookRow; changed: boolean; auditId?: number };

// The destination to store: ?18 as given, with the stored credentials when it has none of its own
// and keeps the type.
const DESTINATION = `(CASE WHEN ?18 IS NOT NULL AND json_extract(?18, '$.sealed') IS NULL
    AND json_extract(destination, '$.type') IS json_extract(?18, '$.type')
  THEN json_set(?18, '$.sealed', json_extract(destination, '$.sealed')) ELSE ?18 END)`;
// Why the patch does not fit the destination as stored (NULL: it does): a new type without its
// credentials, a URL for a destination that is not HTTP, an HTTP destination without its URL.
const UNFIT = `(CASE
  WHEN ?17 = 1 AND ?18 IS NOT NULL AND json_extract(?18, '$.sealed') IS NULL
    AND json_extract(destination, '$.type') IS NOT json_extract(?18, '$.type') THEN 'credentials'
  WHEN ?3 = 1 AND ?17 = 0 AND destination IS NOT NULL THEN 'url-not-http'
  WHEN ?17 = 1 AND ?18 IS NULL AND ?3 = 0 AND destination IS NOT NULL THEN 'url-required' END)`;
// ?3 ?5 ?7 ?9 ?11 ?13 ?17 ?19: whether url, event_types, rate_limit, description, filter, ordering,
// destination, headers are given; ?4 ?6 ?8 ?10 ?12 ?14 ?18 ?20 their values.
const CHANGES = `(${UNFIT} IS NULL AND ((?3 = 1 AND url IS NOT ?4) OR (?5 = 1 AND event_types IS NOT ?6)
  OR (?7 = 1 AND rate_limit IS NOT ?8) OR (?9 = 1 AND description IS NOT ?10)
  OR (?11 = 1 AND filter IS NOT ?12) OR (?13 = 1 AND ordering IS NOT ?14)
  OR (?17 = 1 AND destination IS NOT ${DESTINATION}) OR (?19 = 1 AND headers IS NOT ?20)))`;
// A new URL that another of the application's webhooks has (its own URL is no change).
const TAKEN = `(?3 = 1 AND url IS NOT ?4 AND EXISTS (
  SELECT 1 FROM webhooks AS other
  WHERE other.app_id = ?2 AND other.url = ?4 AND other.webhook_id <> CAST(?1 AS INTEGER)))`;

/**
 * Changes the fields of `patch` of the application's webhook. The duplicate-URL rule is part of
 * the updating statement itself (never a read, then a write), so two racing PATCHes cannot give
 * two webhooks one URL. A field set to what it is changes nothing; when nothing changes, nothing
 * is recorded and `updated_at` stays. Safe to retry: a retry after a commit finds nothing to change.
 */
export async function patchWebhook(
  db: Db,
  webhookId: string,
  patch: WebhookPatch,
  actor: Actor,
): Promise<PatchOutcome> {
  const given = (field: keyof WebhookPatch) => (field in patch ? 1 : 0);
  const values = [
    webhookId,
    actor.appId,
    given('url'),
    patch.url ?? null,
    given('eventTypes'),
    patch.eventTypes ?? null,
    given('rateLimit'),
    patch.rateLimit ?? null,
    given('description'),
    patch.description ?? null,
    given('filter'),
    patch.filter ?? null,
    given('ordering'),
    patch.ordering ?? null,
  ];
  const more = [given('destination'), patch.destination ?? null, given('headers'), patch.headers ?? null];
  const [audit, update, after] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `INSERT INTO webhook_audit (${AUDIT_COLUMNS})
         SELECT webhook_id, app_id, 'update', ${ROW_JSON}, ?2, ?15, ?16
         FROM webhooks
         WHERE ${OWNED} AND ${CHANGES} AND NOT ${TAKEN}`,
      )
      .bind(...values, actor.jti, actor.requestId, ...more),
    db
      .prepare(
        `UPDATE webhooks
         SET url = CASE WHEN ?3 = 1 THEN ?4 ELSE url END,
           url_checked = CASE WHEN ?3 = 1 AND url IS NOT ?4 THEN 1 ELSE url_checked END,
           failing_since = CASE WHEN ?3 = 1 AND url IS NOT ?4 THEN NULL ELSE failing_since END,
           event_types = CASE WHEN ?5 = 1 THEN ?6 ELSE event_types END,
           rate_limit = CASE WHEN ?7 = 1 THEN ?8 ELSE rate_limit END,
           description = CASE WHEN ?9 = 1 THEN ?10 ELSE description END,
           filter = CASE WHEN ?11 = 1 THEN ?12 ELSE filter END,
           ordering = CASE WHEN ?13 = 1 THEN ?14 ELSE ordering END,
           destination = CASE WHEN ?17 = 1 THEN ${DESTINATION} ELSE destination END,
           headers = CASE WHEN ?19 = 1 THEN ?20 ELSE headers END,
           updated_at = ${NOW}
         WHERE ${OWNED} AND ${CHANGES} AND NOT ${TAKEN}`,
      )
      .bind(...values, null, null, ...more),
    db
      .prepare(`SELECT ${COLUMNS}, ${TAKEN} AS taken, ${UNFIT} AS unfit FROM webhooks WHERE ${OWNED}`)
      .bind(...values, null, null, ...more.slice(0, 2)),
  ]);
  const row = after?.results[0] as (WebhookRow & { taken: number; unfit: string | null }) | undefined;
  if (row === undefined) return { outcome: 'missing' };
  const changed = update?.meta.changes === 1;
  if (!changed && row.unfit !== null) return { outcome: 'invalid', reason: row.unfit as 'credentials' };
  if (!changed && row.taken === 1) return { outcome: 'duplicate' };
  const { taken: _, unfit: __, ...webhook } = row;
  return { outcome: 'patched', webhook, changed, auditId: auditIdOf(audit) };
}
