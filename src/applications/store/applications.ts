// SQL of the applications as the platform sets them: each one's retention and its erasure, with
// their audit records. One round trip per function; statements that go together in one batch,
// which D1 runs as a transaction.
import type { Db } from '../../platform/d1';
import type { Actor } from '../../webhooks/store/rows';

const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

/** What an erasure counts, in the order of its counts' JSON object. */
export const ERASED_ITEMS = [
  'webhooks',
  'idempotency_keys',
  'audit_records',
  'events',
  'deliveries',
  'attempts',
  'values',
  'archives',
] as const;
export type ErasedCounts = Record<(typeof ERASED_ITEMS)[number], number>;

/** An application's row; null fields: never set. */
export interface ApplicationRow {
  app_id: string;
  retention_days: number | null;
  updated_at: string;
  erasure_requested_at: string | null;
  erased_at: string | null;
  /** JSON text of ErasedCounts: what its erasures deleted, in all. */
  erased: string | null;
}

export const readApplication = (db: Db, appId: string) =>
  db
    .prepare(
      `SELECT app_id, retention_days, updated_at, erasure_requested_at, erased_at, erased
       FROM applications WHERE app_id = ?1`,
    )
    .bind(appId)
    .first<ApplicationRow>();

/**
 * Sets the application's retention, with an audit record of the change (none when it had those
 * days already). Returns its row after.
 */
export async function setRetention(db: Db, appId: string, days: number, actor: Actor): Promise<ApplicationRow> {
  const [, , row] = await db.batch<ApplicationRow>([
    db
      .prepare(
        `INSERT INTO application_audit (app_id, action, detail, actor, actor_jti, request_id)
         SELECT ?1, 'retention', json_object('retention_days', ?2, 'before',
             (SELECT retention_days FROM applications WHERE app_id = ?1)), ?3, ?4, ?5
         WHERE NOT EXISTS (SELECT 1 FROM applications WHERE app_id = ?1 AND retention_days = ?2)`,
      )
      .bind(appId, days, actor.appId, actor.jti, actor.requestId),
    db
      .prepare(
        `INSERT INTO applications (app_id, retention_days) VALUES (?1, ?2)
         ON CONFLICT (app_id) DO UPDATE SET retention_days = excluded.retention_days, updated_at = ${NOW}
         WHERE retention_days IS NOT excluded.retention_days`,
      )
      .bind(appId, days),
    db
      .prepare(
        `SELECT app_id, retention_days, updated_at, erasure_requested_at, erased_at, erased
         FROM applications WHERE app_id = ?1`,
      )
      .bind(appId),
  ]);
  return row?.results[0] as ApplicationRow;
}

/**
 * Asks for the application's erasure: a new one, unless one is under way (then nothing changes),
 * remembering who asked for its audit record.
 */
export async function requestErasure(db: Db, appId: string, actor: Actor): Promise<void> {
  await db
    .prepare(
      `INSERT INTO applications (app_id, erasure_requested_at, erasure_request)
       VALUES (?1, ${NOW}, json_object('actor', ?2, 'actor_jti', ?3, 'request_id', ?4))
       ON CONFLICT (app_id) DO UPDATE SET erasure_requested_at = excluded.erasure_requested_at,
         erasure_request = excluded.erasure_request, erased_at = NULL
       WHERE erasure_requested_at IS NULL OR erased_at IS NOT NULL`,
    )
    .bind(appId, actor.appId, actor.jti, actor.requestId)
    .run();
}

/** The applications whose erasure is under way, oldest request first, at most `limit`. */
export async function erasuresUnderWay(db: Db, limit: number): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT app_id FROM applications
       WHERE erasure_requested_at IS NOT NULL AND erased_at IS NULL
       ORDER BY erasure_requested_at LIMIT ?1`,
    )
    .bind(limit)
    .all<{ app_id: string }>();
  return results.map((r) => r.app_id);
}

/**
 * The `erased` counts plus, for each item, the SQL expression (or `?n` parameter) of what this
 * step deleted; 0 for the items it does not name.
 */
const addedCounts = (added: Partial<Record<(typeof ERASED_ITEMS)[number], string>>) =>
  `json_object(${ERASED_ITEMS.map(
    (item) => `'${item}', coalesce(json_extract(erased, '$.${item}'), 0) + (${added[item] ?? '0'})`,
  ).join(', ')})`;

/**
 * The erasure's first step, in D1: counts, then deletes, the application's webhooks (their sealed
 * secrets with them) and Idempotency-Keys, and removes the URLs and descriptions from its
 * webhooks' audit records (and their destinations and headers). Publishing then finds no webhook of the application. A repeat finds nothing.
 */
export async function eraseInD1(db: Db, appId: string): Promise<void> {
  const named = `(json_type(row_before, '$.url') IS NOT NULL OR json_type(row_before, '$.description') IS NOT NULL
    OR json_type(row_before, '$.destination') IS NOT NULL OR json_type(row_before, '$.headers') IS NOT NULL)`;
  await db.batch([
    db
      .prepare(
        `UPDATE applications SET erased = ${addedCounts({
          webhooks: 'SELECT COUNT(*) FROM webhooks WHERE app_id = ?1',
          idempotency_keys: 'SELECT COUNT(*) FROM idempotency_keys WHERE app_id = ?1',
          audit_records: `SELECT COUNT(*) FROM webhook_audit WHERE app_id = ?1 AND ${named}`,
        })} WHERE app_id = ?1`,
      )
      .bind(appId),
    db
      .prepare(
        `UPDATE webhook_audit SET row_before = json_remove(row_before, '$.url', '$.description', '$.destination', '$.headers')
         WHERE app_id = ?1 AND ${named}`,
      )
      .bind(appId),
    db.prepare('DELETE FROM idempotency_keys WHERE app_id = ?1').bind(appId),
    db.prepare('DELETE FROM webhooks WHERE app_id = ?1').bind(appId),
  ]);
}

const UNDER_WAY = 'app_id = ?1 AND erasure_requested_at IS NOT NULL AND erased_at IS NULL';

/** The counts' SQL with `counts` as parameters from ?2 on, and those parameters. */
function countsAdded(counts: Partial<ErasedCounts>): { added: string; values: number[] } {
  const items = Object.keys(counts) as (typeof ERASED_ITEMS)[number][];
  return {
    added: addedCounts(Object.fromEntries(items.map((item, i) => [item, `?${i + 2}`]))),
    values: items.map((item) => counts[item] ?? 0),
  };
}

/** Adds what a step of an erasure under way deleted outside D1 to its counts, as soon as it is done. */
export async function countErased(db: Db, appId: string, counts: Partial<ErasedCounts>): Promise<void> {
  const { added, values } = countsAdded(counts);
  await db
    .prepare(`UPDATE applications SET erased = ${added} WHERE ${UNDER_WAY}`)
    .bind(appId, ...values)
    .run();
}

/**
 * The erasure's last step: adds its last counts, marks it done and writes its audit record (the
 * counts, and who asked), once: a run that finds it done already changes nothing.
 */
export async function finishErasureInD1(db: Db, appId: string, counts: Partial<ErasedCounts>): Promise<void> {
  const { added, values } = countsAdded(counts);
  await db.batch([
    db
      .prepare(
        `INSERT INTO application_audit (app_id, action, detail, actor, actor_jti, request_id)
         SELECT app_id, 'erase', ${added}, json_extract(erasure_request, '$.actor'),
           json_extract(erasure_request, '$.actor_jti'), json_extract(erasure_request, '$.request_id')
         FROM applications WHERE ${UNDER_WAY}`,
      )
      .bind(appId, ...values),
    db
      .prepare(`UPDATE applications SET erased = ${added}, erased_at = ${NOW} WHERE ${UNDER_WAY}`)
      .bind(appId, ...values),
  ]);
}
