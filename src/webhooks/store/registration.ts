// Registering a webhook (POST): the insert checks every rule itself, in one batch with its audit
// record and its Idempotency-Key. One round trip.
import type { Db } from '../../platform/d1';
import { KEY_EXPIRED } from './keys';
import { type Actor, AUDIT_COLUMNS, columnsOf, NOW, prefixed, ROW_JSON, type WebhookRow } from './rows';

export interface NewWebhook {
  url: string;
  enabled: boolean;
  /** JSON text of the event types it receives; null: every type. */
  eventTypes: string | null;
  description: string | null;
  rateLimit: number | null;
  /** Its content filter's JSON text as sent; null or absent: none. */
  filter?: string | null;
  /** 'fifo': one delivery at a time, in order; null or absent: none. */
  ordering?: 'fifo' | null;
  /** Its signing secret, encrypted. */
  sealedSecret: string;
  /** Its destination as stored (credentials sealed); null or absent: an HTTP endpoint. */
  destination?: string | null;
  /** Its custom headers as stored (sensitive values sealed); null or absent: none. */
  headers?: string | null;
  /** The most webhooks the application may have (WEBHOOKS_PER_APP). */
  cap: number;
  /** Unique to this request and kept across its retries: finds what an earlier attempt made. */
  writeId: string;
  /** The request's Idempotency-Key and a hash of its body bytes, when it sent one. */
  idempotency?: { key: string; hash: string };
  /**
   * The application's URLs stored before URLs were normalised, each with its normalised form:
   * brought to that form in the same batch, before the duplicate check looks at them.
   */
  normalise?: { id: string; from: string; to: string }[];
}

/** A URL stored before URLs were normalised: its webhook's id and the URL as stored. */
export interface UncheckedUrl {
  id: string;
  url: string;
}

export type CreateOutcome =
  /** Made by this request (by this attempt, or by an earlier attempt whose reply was lost). */
  | { outcome: 'created'; webhook: WebhookRow; auditId: number }
  /**
   * The Idempotency-Key's first request made it: that webhook as it was made, again, with its
   * secret as first stored (null for a key stored before webhooks had secrets).
   */
  | { outcome: 'replayed'; webhook: WebhookRow; sealedSecret: string | null }
  /** Nothing made: the application has URLs to normalise first (then call again with them). */
  | { outcome: 'unchecked'; urls: UncheckedUrl[] }
  | { outcome: 'key-reused' | 'duplicate' | 'full' };

/**
 * Registers a webhook, with its create record (and the Idempotency-Key, with the webhook's row as
 * created) in the same batch. The rules hold under concurrency because the insert checks them itself, and D1 runs a
 * batch as one transaction: no earlier attempt of this request made one (write id), the key is
 * unused, the application has no URL left to normalise, the URL is not registered for it, and it
 * has fewer than `cap` webhooks. The last statement reads back why, in order: ours, the key's,
 * URLs to normalise, a duplicate, the cap.
 */
export async function createWebhook(db: Db, hook: NewWebhook, actor: Actor): Promise<CreateOutcome> {
  const key = hook.idempotency;
  const statements = [
    db
      .prepare(
        `INSERT INTO webhooks (app_id, url, is_enabled, event_types, secret, description, rate_limit, filter, ordering,
           disabled_reason, disabled_at, destination, headers)
         SELECT ?1, ?2, ?3, ?7, ?8, ?9, ?10, ?11, ?12, CASE WHEN ?3 = 0 THEN 'application' END,
           CASE WHEN ?3 = 0 THEN ${NOW} END, ?13, ?14
         WHERE NOT EXISTS (SELECT 1 FROM webhook_audit WHERE write_id = ?4)
           AND NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE app_id = ?1 AND idem_key = ?6)
           AND NOT EXISTS (SELECT 1 FROM webhooks WHERE app_id = ?1 AND url_checked = 0)
           AND NOT EXISTS (SELECT 1 FROM webhooks WHERE app_id = ?1 AND url = ?2)
           AND (SELECT COUNT(*) FROM webhooks WHERE app_id = ?1) < ?5`,
      )
      .bind(
        actor.appId,
        hook.url,
        hook.enabled ? 1 : 0,
        hook.writeId,
        hook.cap,
        key?.key ?? null,
        hook.eventTypes,
        hook.sealedSecret,
        hook.description,
        hook.rateLimit,
        hook.filter ?? null,
        hook.ordering ?? null,
        hook.destination ?? null,
        hook.headers ?? null,
      ),
    // changes() is the insert's count: 0 when it made nothing, and then last_insert_rowid() is stale.
    db
      .prepare(
        `INSERT INTO webhook_audit (${AUDIT_COLUMNS}, write_id)
         SELECT webhook_id, app_id, 'create', ${ROW_JSON}, ?1, ?2, ?3, ?4
         FROM webhooks
         WHERE webhook_id = last_insert_rowid() AND changes() = 1`,
      )
      .bind(actor.appId, actor.jti, actor.requestId, hook.writeId),
  ];
  for (const { id, from, to } of hook.normalise ?? []) {
    statements.unshift(
      db
        .prepare(
          `UPDATE webhooks SET url = ?3, url_checked = 1
           WHERE webhook_id = CAST(?1 AS INTEGER) AND app_id = ?4 AND url = ?2 AND url_checked = 0`,
        )
        .bind(id, from, to, actor.appId),
    );
  }
  if (key !== undefined) {
    // A key past its 24 hours is forgotten first, so it can be used again.
    statements.unshift(
      db
        .prepare(`DELETE FROM idempotency_keys WHERE app_id = ?1 AND idem_key = ?2 AND ${KEY_EXPIRED}`)
        .bind(actor.appId, key.key),
    );
    // changes() is the create record's count. The key keeps the webhook's secret (encrypted),
    // which its replay answers again; the create record never holds one.
    statements.push(
      db
        .prepare(
          `INSERT INTO idempotency_keys (app_id, idem_key, request_hash, webhook_id, webhook_row)
           SELECT ?1, ?2, ?3, webhook_id, json_set(row_before, '$.secret', ?5)
           FROM webhook_audit
           WHERE write_id = ?4 AND changes() = 1`,
        )
        .bind(actor.appId, key.key, key.hash, hook.writeId, hook.sealedSecret),
    );
  }
  // In one row: the webhook this request made (its create record: `c_`), the one the key's first
  // request made (`k_`), and the facts the rules look at.
  statements.push(
    db
      .prepare(
        `SELECT ${columnsOf('a.row_before', 'c_')}, a.audit_id, k.request_hash, ${columnsOf('k.webhook_row', 'k_')},
           json_extract(k.webhook_row, '$.secret') AS k_secret,
           (SELECT json_group_array(json_array(CAST(webhook_id AS TEXT), url))
            FROM webhooks WHERE app_id = ?1 AND url_checked = 0) AS unchecked,
           EXISTS (SELECT 1 FROM webhooks WHERE app_id = ?1 AND url = ?2) AS duplicate,
           (SELECT COUNT(*) FROM webhooks WHERE app_id = ?1) AS webhooks
         FROM (SELECT 1)
         LEFT JOIN webhook_audit AS a ON a.write_id = ?3
         LEFT JOIN idempotency_keys AS k ON k.app_id = ?1 AND k.idem_key = ?4`,
      )
      .bind(actor.appId, hook.url, hook.writeId, key?.key ?? null),
  );
  const results = await db.batch<Record<string, unknown>>(statements);
  const facts = results[results.length - 1]?.results[0];
  if (facts === undefined) throw new Error('create: no outcome row');
  const ours = prefixed(facts, 'c_');
  if (ours !== undefined) return { outcome: 'created', webhook: ours, auditId: Number(facts.audit_id) };
  const keyed = prefixed(facts, 'k_');
  if (keyed !== undefined) {
    return facts.request_hash === key?.hash
      ? { outcome: 'replayed', webhook: keyed, sealedSecret: (facts.k_secret as string | null) ?? null }
      : { outcome: 'key-reused' };
  }
  const unchecked = JSON.parse(facts.unchecked as string) as [string, string][];
  if (unchecked.length > 0) return { outcome: 'unchecked', urls: unchecked.map(([id, url]) => ({ id, url })) };
  const rules = facts as { duplicate: number; webhooks: number };
  if (rules.duplicate === 1) return { outcome: 'duplicate' };
  if (rules.webhooks >= hook.cap) return { outcome: 'full' };
  throw new Error('create: nothing was inserted, and no rule says why');
}
