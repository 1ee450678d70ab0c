import type { Context } from 'hono';
import { decryptSecret, sealedNewSecret, secretKey } from '../deliveries/signing';
import { jsonObject, readJsonBody } from '../http/body';
import { notFound, success } from '../http/envelope';
import type { AppEnv } from '../types';
import { actorOf } from './actor';
import { withD1 } from './d1';
import { queryOf, webhookIdField, webhookIdParam } from './params';
import { secretJson } from './representation';
import { provideSecrets, rotateSecret } from './store';

/**
 * GET /v1.0/app/nft/webhook/secret?webhook_id=N: the webhook's signing secret. A webhook
 * registered before secrets existed is given one now, atomically (racing reads get the same).
 */
export async function readSecret(c: Context<AppEnv>): Promise<Response> {
  const webhookId = webhookIdParam(queryOf(c.req.url));
  c.set('webhookId', webhookId);
  const key = await secretKey(c.env);
  // Used only if the webhook has no secret yet.
  const { sealed } = await sealedNewSecret(c.env);
  const secrets = await withD1(c, 'first-primary', (db) =>
    provideSecrets(db, [{ webhookId, appId: c.get('appId'), sealed }]),
  );
  const stored = secrets.get(webhookId);
  if (stored === undefined) throw notFound();
  return success(c, { value: secretJson(await decryptSecret(key, stored.secret)) });
}

/**
 * POST /v1.0/app/nft/webhook/secret {"webhook_id"}: a new signing secret. For the next 24 hours
 * the previous one signs too (two signatures, new first), so receivers switch without losing a
 * delivery. Audited (`rotate_secret`, no secret in the record).
 */
export async function rotateWebhookSecret(c: Context<AppEnv>): Promise<Response> {
  const webhookId = webhookIdField(jsonObject((await readJsonBody(c.req.raw)).value).webhook_id);
  c.set('webhookId', webhookId);
  const { secret, sealed } = await sealedNewSecret(c.env);
  const found = await withD1(c, 'first-primary', (db) => rotateSecret(db, webhookId, sealed, actorOf(c)));
  if (!found) throw notFound();
  return success(c, { value: secretJson(secret) });
}
