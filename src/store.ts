// All SQL of the service. Every function is one D1 round trip; a change and its audit record are
// one batch, which D1 runs as a transaction.
//
// Webhook ids travel as decimal text and are turned into INTEGER by SQLite (CAST), so an int64 is
// never rounded through a JavaScript double. Ownership is part of every WHERE clause.

/** Who made a change, recorded with it. */
export interface Actor {
  appId: string;
  jti: string | null;
  requestId: string;
}

// The whole row, as JSON text, for the audit record. SQLite writes the integer id exactly.
const ROW_JSON = `json_object(
    'webhook_id', webhook_id, 'app_id', app_id, 'url', url, 'is_enabled', is_enabled,
    'created_at', created_at, 'updated_at', updated_at)`;

const OWNED = 'webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2';

/** Whether the application has the webhook: `found` is 1 or 0. */
const ownedWebhook = (db: D1Database, webhookId: string, appId: string) =>
  db.prepare(`SELECT EXISTS (SELECT 1 FROM webhooks WHERE ${OWNED}) AS found`).bind(webhookId, appId);

const AUDIT_COLUMNS = 'webhook_id, app_id, action, row_before, actor, actor_jti, request_id';

/**
 * Sets a webhook's active state. Returns false when the application has no such webhook.
 * Setting the state it already has changes nothing and records nothing.
 */
export async function setWebhookEnabled(
  db: D1Database,
  webhookId: string,
  enabled: boolean,
  actor: Actor,
): Promise<boolean> {
  const state = enabled ? 1 : 0;
  const [, , found] = await db.batch<{ found: number }>([
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
         SET is_enabled = ?3, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
         WHERE ${OWNED} AND is_enabled <> ?3`,
      )
      .bind(webhookId, actor.appId, state),
    ownedWebhook(db, webhookId, actor.appId),
  ]);
  return found?.results[0]?.found === 1;
}

/** Whether the application has this webhook. */
export async function webhookExists(db: D1Database, webhookId: string, appId: string): Promise<boolean> {
  const row = await ownedWebhook(db, webhookId, appId).first<{ found: number }>();
  return row?.found === 1;
}

/**
 * Deletes a webhook, keeping its last row in the audit table. Returns true when the webhook is
 * gone because this application deleted it, now or before (DELETE is idempotent for its owner);
 * false when the application never had it.
 */
export async function deleteWebhook(db: D1Database, webhookId: string, actor: Actor): Promise<boolean> {
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
