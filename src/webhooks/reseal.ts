// Re-sealing (the Cron Trigger): after a new key is put first in WEBHOOK_SECRET_KEYS, every stored
// signing secret (and destination credentials, sensitive headers) that another key of the ring sealed is sealed again with the new one, a bounded
// number a run, so that the old key can then be removed. A secret that no key of the ring opens is
// left as it is (its deliveries wait; the log names its key id).
import { log } from '../core/log';
import { retryD1 } from '../platform/d1';
import { openSecret, type SecretKeys, sealedPrefix, sealedWith, sealSecret, secretKeys } from './secrets';
import { keysSealedWith, type SealedKey, type SealedWebhook, storeResealed, webhooksSealedWith } from './store/sealed';

/** Stored secrets (webhooks' and Idempotency-Keys') one run re-seals at most. */
export const RESEAL_PER_RUN = 2000;

/**
 * `stored` sealed with the ring's sealing key: as it is when that key sealed it, or when no key of
 * the ring opens it (logged with the key id, and left for the key to come back).
 */
async function resealed(keys: SecretKeys, stored: string | null, failed: Set<string>): Promise<string | null> {
  if (stored === null || sealedWith(stored) === keys.sealingId) return stored;
  try {
    return await sealSecret(keys, await openSecret(keys, stored));
  } catch (err) {
    const keyId = sealedWith(stored);
    if (!failed.has(keyId))
      log('error', { msg: 'cron: stored signing secrets could not be re-sealed', key_id: keyId }, err);
    failed.add(keyId);
    return stored;
  }
}

/**
 * One run: up to RESEAL_PER_RUN secrets sealed with the ring's other keys, sealed again with its
 * first. Returns how many rows it changed; with a single key it has nothing to do and reads nothing.
 */
export async function resealSecrets(env: CloudflareBindings, limit = RESEAL_PER_RUN): Promise<number> {
  const keys = await secretKeys(env);
  const older = [...keys.byId.keys()].filter((id) => id !== keys.sealingId);
  if (older.length === 0) return 0;
  const prefixes = older.map(sealedPrefix);
  const hooks = await retryD1(() => webhooksSealedWith(env.DB, prefixes, limit));
  const idem = hooks.length < limit ? await retryD1(() => keysSealedWith(env.DB, prefixes, limit - hooks.length)) : [];
  const failed = new Set<string>();
  const webhooks: { was: SealedWebhook; now: SealedWebhook }[] = [];
  for (const was of hooks) {
    const now = {
      id: was.id,
      secret: await resealed(keys, was.secret, failed),
      previous_secret: await resealed(keys, was.previous_secret, failed),
      credentials: await resealed(keys, was.credentials, failed),
      sensitive: await resealed(keys, was.sensitive, failed),
    };
    if (
      now.secret !== was.secret ||
      now.previous_secret !== was.previous_secret ||
      now.credentials !== was.credentials ||
      now.sensitive !== was.sensitive
    )
      webhooks.push({ was, now });
  }
  const idempotency: { was: SealedKey; now: SealedKey }[] = [];
  for (const was of idem) {
    const now = { ...was, secret: (await resealed(keys, was.secret, failed)) as string };
    if (now.secret !== was.secret) idempotency.push({ was, now });
  }
  const changed =
    webhooks.length + idempotency.length === 0 ? 0 : await retryD1(() => storeResealed(env.DB, webhooks, idempotency));
  if (hooks.length + idem.length < limit && failed.size === 0) {
    // Nothing left after this run: the other keys open nothing stored any more.
    log('info', {
      msg: `cron: every stored signing secret the key ring opens is sealed with key ${keys.sealingId}; its other keys can be removed`,
      key_id: keys.sealingId,
      other_keys: older,
    });
  }
  return changed;
}
