// Recovery: failed deliveries of a window made pending again, on a fresh schedule. One round trip.
import type { Db } from '../../platform/d1';
import type { QueuedDelivery } from '../../platform/queues';
import { OWNED } from '../../webhooks/store/rows';

/** What a recovery found: no such webhook, a disabled one, or the deliveries it made pending again. */
export type RecoverOutcome =
  | { outcome: 'missing' }
  | { outcome: 'disabled' }
  | { outcome: 'recovered'; deliveries: QueuedDelivery[] };

/**
 * Makes every `failed` delivery of the application's webhook created in [since, until) pending
 * again, due now, with the retry schedule starting over (attempts keep counting), marked with
 * `recoveryId` (the same in every retry of the request's batch). One statement does it, so two
 * racing recoveries never take the same delivery. Only for an enabled webhook.
 */
export async function recoverDeliveries(
  db: Db,
  webhookId: string,
  appId: string,
  since: string,
  until: string,
  now: string,
  recoveryId: string,
): Promise<RecoverOutcome> {
  const window = `${OWNED} AND created_at >= ?3 AND created_at < ?4`;
  const [, recovered, facts] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `UPDATE deliveries
         SET status = 'pending', schedule_start = attempts, next_attempt_at = ?5, queue_gen = queue_gen + 1,
           recovery_id = ?6
         WHERE ${window} AND status = 'failed' AND EXISTS (SELECT 1 FROM webhooks WHERE ${OWNED} AND is_enabled = 1)`,
      )
      .bind(webhookId, appId, since, until, now, recoveryId),
    // What this recovery made pending (found again should a retry of this batch run after its
    // first attempt committed) and that no attempt has taken since.
    db
      .prepare(
        `SELECT CAST(delivery_id AS TEXT) AS id, queue_gen AS gen FROM deliveries
         WHERE webhook_id = CAST(?1 AS INTEGER) AND recovery_id = ?2 AND status = 'pending'
           AND schedule_start = attempts`,
      )
      .bind(webhookId, recoveryId),
    db.prepare(`SELECT (SELECT is_enabled FROM webhooks WHERE ${OWNED}) AS enabled`).bind(webhookId, appId),
  ]);
  const enabled = facts?.results[0]?.enabled;
  if (enabled == null) return { outcome: 'missing' };
  if (enabled !== 1) return { outcome: 'disabled' };
  return { outcome: 'recovered', deliveries: (recovered?.results ?? []) as unknown as QueuedDelivery[] };
}
