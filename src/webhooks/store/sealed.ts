// Sealed signing secrets where they are stored: a webhook's current and previous secret, its
// destination's credentials and its sensitive headers, and the secret an Idempotency-Key keeps for its replay. Read and written for re-sealing them under the
// key ring's new key (the Cron Trigger).
import type { Db } from '../../platform/d1';

/** A webhook's sealed secrets. */
export interface SealedWebhook {
  id: string;
  secret: string | null;
  previous_secret: string | null;
  /** Its destination's credentials, sealed (null: none). */
  credentials: string | null;
  /** Its sensitive headers' values, sealed (null: none). */
  sensitive: string | null;
}

/** An Idempotency-Key's sealed secret. */
export interface SealedKey {
  app_id: string;
  idem_key: string;
  secret: string;
}

// `?1`: a JSON array of the stored forms' beginnings to find (one per key id).
const startsWithAny = (column: string) =>
  `EXISTS (SELECT 1 FROM json_each(?1) AS p WHERE substr(${column}, 1, length(p.value)) = p.value)`;

/** At most `limit` webhooks with a secret whose stored form begins with one of `prefixes`. */
export async function webhooksSealedWith(db: Db, prefixes: string[], limit: number): Promise<SealedWebhook[]> {
  const { results } = await db
    .prepare(
      `SELECT id, secret, previous_secret, credentials, sensitive
       FROM (SELECT CAST(webhook_id AS TEXT) AS id, secret, previous_secret,
           json_extract(destination, '$.sealed') AS credentials, json_extract(headers, '$.sealed') AS sensitive
         FROM webhooks)
       WHERE ${startsWithAny('secret')} OR ${startsWithAny('previous_secret')} OR ${startsWithAny('credentials')}
         OR ${startsWithAny('sensitive')}
       LIMIT ?2`,
    )
    .bind(JSON.stringify(prefixes), limit)
    .all<SealedWebhook>();
  return results;
}

/** At most `limit` Idempotency-Keys whose secret's stored form begins with one of `prefixes`. */
export async function keysSealedWith(db: Db, prefixes: string[], limit: number): Promise<SealedKey[]> {
  const { results } = await db
    .prepare(
      `SELECT app_id, idem_key, secret
       FROM (SELECT app_id, idem_key, json_extract(webhook_row, '$.secret') AS secret FROM idempotency_keys)
       WHERE ${startsWithAny('secret')}
       LIMIT ?2`,
    )
    .bind(JSON.stringify(prefixes), limit)
    .all<SealedKey>();
  return results;
}

/**
 * Stores re-sealed secrets, in one batch: each row only where it still holds what was read
 * (`was`), so a rotation or a new secret written meanwhile is never overwritten (the next run
 * takes that row again). Returns how many rows changed.
 */
export async function storeResealed(
  db: Db,
  webhooks: { was: SealedWebhook; now: SealedWebhook }[],
  keys: { was: SealedKey; now: SealedKey }[],
): Promise<number> {
  const field = (name: string) => `json_extract(r.value, '$.${name}')`;
  const [hooks, idem] = await db.batch([
    db
      .prepare(
        `UPDATE webhooks SET secret = ${field('secret')}, previous_secret = ${field('previous_secret')},
           destination = CASE WHEN destination IS NULL THEN NULL
             ELSE json_set(destination, '$.sealed', ${field('credentials')}) END,
           headers = CASE WHEN headers IS NULL THEN NULL ELSE json_set(headers, '$.sealed', ${field('sensitive')}) END
         FROM json_each(?1) AS r
         WHERE webhooks.webhook_id = CAST(${field('id')} AS INTEGER)
           AND webhooks.secret IS ${field('was_secret')} AND webhooks.previous_secret IS ${field('was_previous')}
           AND json_extract(webhooks.destination, '$.sealed') IS ${field('was_credentials')}
           AND json_extract(webhooks.headers, '$.sealed') IS ${field('was_sensitive')}`,
      )
      .bind(
        JSON.stringify(
          webhooks.map(({ was, now }) => ({
            id: now.id,
            secret: now.secret,
            previous_secret: now.previous_secret,
            credentials: now.credentials,
            sensitive: now.sensitive,
            was_secret: was.secret,
            was_previous: was.previous_secret,
            was_credentials: was.credentials,
            was_sensitive: was.sensitive,
          })),
        ),
      ),
    db
      .prepare(
        `UPDATE idempotency_keys SET webhook_row = json_set(webhook_row, '$.secret', ${field('secret')})
         FROM json_each(?1) AS r
         WHERE idempotency_keys.app_id = ${field('app_id')} AND idempotency_keys.idem_key = ${field('idem_key')}
           AND json_extract(idempotency_keys.webhook_row, '$.secret') IS ${field('was')}`,
      )
      .bind(JSON.stringify(keys.map(({ was, now }) => ({ ...now, was: was.secret })))),
  ]);
  return (hooks?.meta.changes ?? 0) + (idem?.meta.changes ?? 0);
}
