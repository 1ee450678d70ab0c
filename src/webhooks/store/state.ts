// Changes of a webhook's state (PUT's enable and disable, DELETE), each with its audit record in the
// same batch, which D1 runs as a transaction. One round trip each.
import type { Db } from '../../platform/d1';
import { type Actor, AUDIT_COLUMNS, auditIdOf, NOW, OWNED, ROW_JSON } from './rows';

/** What a change of state did, and its audit record's id when it recorded one. */
export interface StateChange {
  outcome: 'missing' | 'unchanged' | 'changed';
  auditId?: number;
}

/**
 * Sets a webhook's active state: 'missing' when the application has no such webhook, 'unchanged'
 * when it had that state already (nothing changes, nothing is recorded), else 'changed'. Two statements: the
 * audit record (only for a real change, with the row before it), then the update, which matches
 * the application's webhook whatever its state (so its count tells found from missing) and keeps
 * `updated_at` (and a disabled webhook its reason) when the state does not change. Disabling
 * records the application as the reason; enabling clears the reason.
 */
export async function setWebhookEnabled(
  db: Db,
  webhookId: string,
  enabled: boolean,
  actor: Actor,
): Promise<StateChange> {
  const state = enabled ? 1 : 0;
  const [audit, update] = await db.batch([
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
           failing_since = CASE WHEN is_enabled = 0 AND ?3 = 1 THEN NULL ELSE failing_since END,
           disabled_reason = CASE WHEN ?3 = 1 THEN NULL WHEN is_enabled = 1 THEN 'application' ELSE disabled_reason END,
           disabled_at = CASE WHEN ?3 = 1 THEN NULL WHEN is_enabled = 1 THEN ${NOW} ELSE disabled_at END
         WHERE ${OWNED}`,
      )
      .bind(webhookId, actor.appId, state),
  ]);
  if (update?.meta.changes !== 1) return { outcome: 'missing' };
  // The audit record is written exactly when the state changes.
  const auditId = auditIdOf(audit);
  return auditId === undefined ? { outcome: 'unchanged' } : { outcome: 'changed', auditId };
}

/** Whether the application has this webhook. */
export async function webhookExists(db: Db, webhookId: string, appId: string): Promise<boolean> {
  const row = await db
    .prepare(`SELECT EXISTS (SELECT 1 FROM webhooks WHERE ${OWNED}) AS found`)
    .bind(webhookId, appId)
    .first<{ found: number }>();
  return row?.found === 1;
}

/**
 * Deletes a webhook, keeping its last row in the audit table. `gone`: the webhook is gone because
 * this application deleted it, now (`auditId`: its delete record) or before (DELETE is idempotent
 * for its owner); false when the application never had it.
 */
export async function deleteWebhook(
  db: Db,
  webhookId: string,
  actor: Actor,
): Promise<{ gone: boolean; auditId?: number }> {
  const [audit, , gone] = await db.batch<{ gone: number }>([
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
  return { gone: gone?.results[0]?.gone === 1, auditId: auditIdOf(audit) };
}
