import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { notFound, success } from '../http/envelope';
import { idField, idParam, queryOf } from '../http/params';
import { withD1 } from '../http/storage';
import { actorOf } from './actor';
import { tellApplication, tellOperational } from './notify';
import { secretJson } from './representation';
import { openSecret, sealedNewSecret, secretKeys } from './secrets';
import { provideSecrets, rotateSecret } from './store/secrets';

/**
 * GET /v1.0/app/nft/webhook/secret?webhook_id=N: the webhook's signing secret. A webhook
 * registered before secrets existed is given one now, atomically (racing reads get the same).
 */
export async function readSecret(c: Context<AppEnv>): Promise<Response> {
  const webhookId = idParam(queryOf(c.req.url));
  c.set('webhookId', webhookId);
  const keys = await secretKeys(c.env);
  // Used only if the webhook has no secret yet.
  const { sealed } = await sealedNewSecret(c.env);
  const secrets = await withD1(c, 'first-primary', (db) =>
    provideSecrets(db, [{ webhookId, appId: c.get('appId'), sealed }]),
  );
  const stored = secrets.get(webhookId);
  if (stored === undefined) throw notFound();
  return success(c, { value: secretJson(await openSecret(keys, stored.secret)) });
}

/**
 * POST /v1.0/app/nft/webhook/secret {"webhook_id"}: a new signing secret. For the next 24 hours
 * the previous one signs too (two signatures, new first), so receivers switch without losing a
 * delivery. Audited (`rotate_secret`, no secret in the record).
 */
export async function rotateWebhookSecret(c: Context<AppEnv>): Promise<Response> {
  const webhookId = idField(jsonObject((await readJsonBody(c.req.raw)).value).webhook_id);
  c.set('webhookId', webhookId);
  const { secret, sealed } = await sealedNewSecret(c.env);
  const expiresAt = await withD1(c, 'first-primary', (db) => rotateSecret(db, webhookId, sealed, actorOf(c)));
  if (expiresAt === null) throw notFound();
  // Every attempt that starts after this reply signs with the new secret (and the previous one).
  await tellApplication(c, webhookId, { sending: true });
  // secret.rotated: when the previous secret stops signing.
  tellOperational(c, webhookId, 'secret.rotated', { expires_at: expiresAt });
  return success(c, { value: secretJson(secret) });
}
