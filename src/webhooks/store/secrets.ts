// Webhooks' signing secrets as stored (encrypted): given to webhooks registered before secrets
// existed, and rotated. One round trip each.
import type { Db } from '../../platform/d1';
import { type Actor, AUDIT_COLUMNS, OWNED, ROW_JSON } from './rows';

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
 * record (no secret in it) in the same batch. Returns when the previous secret stops signing, or
 * null when the application has no such webhook. A retry of a committed batch changes nothing more
 * (the new secret is in place).
 */
export async function rotateSecret(db: Db, webhookId: string, sealed: string, actor: Actor): Promise<string | null> {
  const rotating = `${OWNED} AND secret IS NOT ?3`;
  const [, , found] = await db.batch<{ until: string | null }>([
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
    db.prepare(`SELECT previous_secret_until AS until FROM webhooks WHERE ${OWNED}`).bind(webhookId, actor.appId),
  ]);
  return found?.results[0]?.until ?? null;
}
