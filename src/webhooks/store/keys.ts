// Idempotency-Keys of registrations: kept 24 hours, then purged by the Cron Trigger.
import { inBatches } from '../../core/batches';
import type { Db } from '../../platform/d1';

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_KEY_HOURS = 24;
export const KEY_EXPIRED = `created_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-${IDEMPOTENCY_KEY_HOURS} hours')`;

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

/** Forgets Idempotency-Keys past their 24 hours, in bounded batches; returns how many. */
export const purgeExpiredKeys = (db: Db) => inBatches((n) => purgeIdempotencyKeys(db, n));
