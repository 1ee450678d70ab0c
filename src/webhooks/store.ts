// All SQL of the service. Every function is one D1 round trip; a change and its audit record are
// one batch, which D1 runs as a transaction.
//
// Webhook ids travel as decimal text and are turned into INTEGER by SQLite (CAST), both ways, so
// an int64 is never rounded through a JavaScript double. Ownership is part of every WHERE clause.

/** What the store's functions run on: the database, or one of its D1 sessions. */
export type Db = Pick<D1Database, 'prepare' | 'batch'>;

/** Who made a change, recorded with it. */
export interface Actor {
  appId: string;
  jti: string | null;
  requestId: string;
}

export const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

// The whole row, as JSON text, for the audit record. SQLite writes the integer id exactly. The
// signing secrets are never part of it.
export const ROW_JSON = `json_object(
    'webhook_id', webhook_id, 'app_id', app_id, 'url', url, 'is_enabled', is_enabled,
    'event_types', json(event_types), 'created_at', created_at, 'updated_at', updated_at)`;

/** A webhook as the store returns it: the id as decimal text, `is_enabled` as stored (0/1). */
export interface WebhookRow {
  id: string;
  url: string;
  is_enabled: number;
  /** JSON text of the event types it receives; null: every type. */
  event_types: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * The WebhookRow columns (named with `prefix`), from the table's own columns or from the fields
 * of a row's JSON.
 */
const rowColumns = (column: (name: string) => string = (name) => name, prefix = '') =>
  `CAST(${column('webhook_id')} AS TEXT) AS ${prefix}id, ${[
    'url',
    'is_enabled',
    'event_types',
    'created_at',
    'updated_at',
  ]
    .map((name) => `${column(name)} AS ${prefix}${name}`)
    .join(', ')}`;
const COLUMNS = rowColumns();
/** The WebhookRow of a webhook's row as JSON (an audit record's `row_before`, a key's `webhook_row`). */
const columnsOf = (json: string, prefix: string) => rowColumns((name) => `json_extract(${json}, '$.${name}')`, prefix);

/** The WebhookRow of columns named with `prefix`, or undefined when they are null (no such row). */
function prefixed(row: Record<string, unknown>, prefix: string): WebhookRow | undefined {
  if (row[`${prefix}id`] === null) return undefined;
  const pick = (name: string) => row[`${prefix}${name}`];
  return {
    id: pick('id'),
    url: pick('url'),
    is_enabled: pick('is_enabled'),
    event_types: pick('event_types') ?? null,
    created_at: pick('created_at'),
    updated_at: pick('updated_at'),
  } as WebhookRow;
}

const OWNED = 'webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2';

export const AUDIT_COLUMNS = 'webhook_id, app_id, action, row_before, actor, actor_jti, request_id';

// ---- PUT ------------------------------------------------------------------------------------------

/**
 * Sets a webhook's active state. Returns false when the application has no such webhook.
 * Setting the state it already has changes nothing and records nothing. Two statements: the
 * audit record (only for a real change, with the row before it), then the update, which matches
 * the application's webhook whatever its state (so its count tells found from missing) and keeps
 * `updated_at` when the state does not change.
 */
export async function setWebhookEnabled(db: Db, webhookId: string, enabled: boolean, actor: Actor): Promise<boolean> {
  const state = enabled ? 1 : 0;
  const [, update] = await db.batch([
    db
      .prepare(
        `INSERT INTO webhook_audit (${AUDIT_COLUMNS})
         SELECT webhook_id, app_id, ?3, ${ROW_JSON}, ?2, ?5, ?6
         FROM webhooks
         WHERE ${OWNED} AND is_enabled <> ?4`,
      )
      .bind(webhookId, actor.appId, enabled ? 'enable' : 'disable', state, actor.jti, actor.requestId),
    db
      .prepare(
        `UPDATE webhooks
         SET is_enabled = ?3, updated_at = CASE WHEN is_enabled = ?3 THEN updated_at ELSE ${NOW} END,
           failing_since = CASE WHEN is_enabled = 0 AND ?3 = 1 THEN NULL ELSE failing_since END
         WHERE ${OWNED}`,
      )
      .bind(webhookId, actor.appId, state),
  ]);
  return update?.meta.changes === 1;
}

/** Whether the application has this webhook. */
export async function webhookExists(db: Db, webhookId: string, appId: string): Promise<boolean> {
  const row = await db
    .prepare(`SELECT EXISTS (SELECT 1 FROM webhooks WHERE ${OWNED}) AS found`)
    .bind(webhookId, appId)
    .first<{ found: number }>();
  return row?.found === 1;
}

// ---- DELETE ---------------------------------------------------------------------------------------

/**
 * Deletes a webhook, keeping its last row in the audit table. Returns true when the webhook is
 * gone because this application deleted it, now or before (DELETE is idempotent for its owner);
 * false when the application never had it.
 */
export async function deleteWebhook(db: Db, webhookId: string, actor: Actor): Promise<boolean> {
  const [, , gone] = await db.batch<{ gone: number }>([
    db
      .prepare(
        `INSERT INTO webhook_audit (${AUDIT_COLUMNS})
         SELECT webhook_id, app_id, 'delete', ${ROW_JSON}, ?2, ?3, ?4
         FROM webhooks
         WHERE ${OWNED}`,
      )
      .bind(webhookId, actor.appId, actor.jti, actor.requestId),
    db.prepare(`DELETE FROM webhooks WHERE ${OWNED}`).bind(webhookId, actor.appId),
    // Its own delete record, and no live row under that id (ids are never reused, but rows
    // inserted by hand could reuse one).
    db
      .prepare(
        `SELECT EXISTS (
           SELECT 1 FROM webhook_audit
           WHERE webhook_id = CAST(?1 AS INTEGER) AND action = 'delete' AND app_id = ?2
         ) AND NOT EXISTS (
           SELECT 1 FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)
         ) AS gone`,
      )
      .bind(webhookId, actor.appId),
  ]);
  return gone?.results[0]?.gone === 1;
}

// ---- POST -----------------------------------------------------------------------------------------

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_KEY_HOURS = 24;
const KEY_EXPIRED = `created_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-${IDEMPOTENCY_KEY_HOURS} hours')`;

export interface NewWebhook {
  url: string;
  enabled: boolean;
  /** JSON text of the event types it receives; null: every type. */
  eventTypes: string | null;
  /** Its signing secret, encrypted. */
  sealedSecret: string;
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
  | { outcome: 'created'; webhook: WebhookRow }
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
        `INSERT INTO webhooks (app_id, url, is_enabled, event_types, secret)
         SELECT ?1, ?2, ?3, ?7, ?8
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
        `SELECT ${columnsOf('a.row_before', 'c_')}, k.request_hash, ${columnsOf('k.webhook_row', 'k_')},
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
  if (ours !== undefined) return { outcome: 'created', webhook: ours };
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

/** Forgets Idempotency-Keys older than IDEMPOTENCY_KEY_HOURS, at most `limit`; returns how many. */
export async function purgeIdempotencyKeys(db: Db, limit: number): Promise<number> {
  const result = await db
    .prepare(
      `DELETE FROM idempotency_keys
       WHERE (app_id, idem_key) IN (SELECT app_id, idem_key FROM idempotency_keys WHERE ${KEY_EXPIRED} LIMIT ?1)`,
    )
    .bind(limit)
    .run();
  return result.meta.changes;
}

// ---- GET ------------------------------------------------------------------------------------------

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
 * A keyset page of the application's webhooks, oldest (smallest id) first: `limit` of them, and
 * whether more follow. Keyset, not offset: webhooks created or deleted between pages never make a
 * page repeat or skip one.
 */
export async function listWebhooks(
  db: Db,
  appId: string,
  { after, enabled, limit }: PageQuery,
): Promise<{ webhooks: WebhookRow[]; more: boolean }> {
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
  const more = results.length > limit;
  return { webhooks: more ? results.slice(0, limit) : results, more };
}

// ---- signing secrets ------------------------------------------------------------------------------

/** A webhook's signing secrets as stored (encrypted): the current one, and the previous one with its end. */
export interface StoredSecrets {
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
}

/**
 * The signing secrets of webhooks, one batch. A webhook registered before secrets existed is given
 * `sealed` (a new encrypted secret) first, atomically: when two requests race, the first write
 * wins and both read it. `appId`, when given, must own the webhook. Webhooks that do not exist
 * (or are not the application's) are missing from the result.
 */
export async function provideSecrets(
  db: Db,
  items: { webhookId: string; appId?: string; sealed: string }[],
): Promise<Map<string, StoredSecrets>> {
  const owned = 'webhook_id = CAST(?1 AS INTEGER) AND (?2 IS NULL OR app_id = ?2)';
  const results = await db.batch<StoredSecrets & { id: string }>(
    items.flatMap(({ webhookId, appId, sealed }) => [
      db
        .prepare(`UPDATE webhooks SET secret = ?3 WHERE ${owned} AND secret IS NULL`)
        .bind(webhookId, appId ?? null, sealed),
      db
        .prepare(
          `SELECT CAST(webhook_id AS TEXT) AS id, secret, previous_secret, previous_secret_until
           FROM webhooks WHERE ${owned}`,
        )
        .bind(webhookId, appId ?? null),
    ]),
  );
  const secrets = new Map<string, StoredSecrets>();
  for (const { results: rows } of results) {
    const row = rows[0];
    if (row?.id !== undefined && row.secret !== undefined) secrets.set(row.id, row);
  }
  return secrets;
}

/** How long a rotated-out secret keeps signing, next to the new one. */
export const PREVIOUS_SECRET_HOURS = 24;

/**
 * Rotates a webhook's signing secret to `sealed`: the current one becomes the previous one,
 * signing too for PREVIOUS_SECRET_HOURS (the one before it stops), with a `rotate_secret` audit
 * record (no secret in it) in the same batch. Returns false when the application has no such
 * webhook. A retry of a committed batch changes nothing more (the new secret is in place).
 */
export async function rotateSecret(db: Db, webhookId: string, sealed: string, actor: Actor): Promise<boolean> {
  const rotating = `${OWNED} AND secret IS NOT ?3`;
  const [, , found] = await db.batch<{ found: number }>([
    db
      .prepare(
        `INSERT INTO webhook_audit (${AUDIT_COLUMNS})
         SELECT webhook_id, app_id, 'rotate_secret', ${ROW_JSON}, ?2, ?4, ?5
         FROM webhooks WHERE ${rotating}`,
      )
      .bind(webhookId, actor.appId, sealed, actor.jti, actor.requestId),
    db
      .prepare(
        `UPDATE webhooks
         SET previous_secret = secret,
           previous_secret_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+${PREVIOUS_SECRET_HOURS} hours'),
           secret = ?3
         WHERE ${rotating}`,
      )
      .bind(webhookId, actor.appId, sealed),
    db.prepare(`SELECT EXISTS (SELECT 1 FROM webhooks WHERE ${OWNED}) AS found`).bind(webhookId, actor.appId),
  ]);
  return found?.results[0]?.found === 1;
}
