import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { badInput, notFound, success } from '../http/envelope';
import { idField } from '../http/params';
import { withD1 } from '../http/storage';
import { actorOf } from './actor';
import { tellApplication, tellOperational } from './notify';
import { type StateChange, setWebhookEnabled, webhookExists } from './store/state';

/** PUT's input. `isEnabled` undefined: the body did not say, nothing is to change. */
export interface WebhookUpdate {
  webhookId: string;
  isEnabled?: boolean;
}

/** Validates a parsed PUT body: int64 `webhook_id`, optional boolean `is_enabled`; others ignored. */
export function webhookUpdate(body: unknown): WebhookUpdate {
  const { webhook_id: raw, is_enabled: isEnabled } = jsonObject(body);
  const webhookId = idField(raw);
  if (isEnabled !== undefined && typeof isEnabled !== 'boolean') {
    throw badInput('is_enabled must be true or false');
  }
  return { webhookId, isEnabled };
}

/** PUT: set the active state; without `is_enabled`, only confirm the webhook is the caller's. */
export async function updateWebhook(c: Context<AppEnv>): Promise<Response> {
  const { webhookId, isEnabled } = webhookUpdate((await readJsonBody(c.req.raw)).value);
  c.set('webhookId', webhookId);
  const { outcome, auditId } = await withD1(
    c,
    'first-primary',
    async (db): Promise<StateChange> =>
      isEnabled === undefined
        ? { outcome: (await webhookExists(db, webhookId, c.get('appId'))) ? 'unchanged' : 'missing' }
        : setWebhookEnabled(db, webhookId, isEnabled, actorOf(c)),
  );
  if (outcome === 'missing') throw notFound();
  // Enabled or disabled now: every event stored after this reply goes to it, or not. Disabled: a
  // pass under way starts no new attempt (enabling needs no word there: the next pass sends; a
  // webhook in that state already was told when it changed).
  if (outcome === 'changed') await tellApplication(c, webhookId, { auditId, sending: true });
  // endpoint.disabled, made after the reply (its URL read there).
  if (isEnabled === false && outcome === 'changed')
    tellOperational(c, webhookId, 'endpoint.disabled', { url: null, reason: 'application' });
  return success(c);
}
