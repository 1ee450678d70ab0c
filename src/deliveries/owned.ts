// The one check every delivery operation makes in D1 before it goes to the objects: the calling
// application has the webhook (404 otherwise, one answer for missing and foreign) and, for an
// operation that sends, it is enabled (409).
import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { type ApiFailure, conflict, notFound } from '../http/envelope';
import { type SessionStart, withD1 } from '../http/storage';
import { webhookState } from '../webhooks/store/reads';

/**
 * The endpoint object of the application's webhook `webhookId`, once D1 (from `start`) says the
 * application has it (else `missing()`), and, with `enabled`, that it is enabled.
 */
export async function ownedEndpoint(
  c: Context<AppEnv>,
  webhookId: string,
  {
    start = 'first-primary',
    enabled = false,
    missing = () => notFound(),
  }: { start?: SessionStart; enabled?: boolean; missing?: () => ApiFailure } = {},
) {
  const state = await withD1(c, start, (db) => webhookState(db, webhookId, c.get('appId')));
  if (state === null) throw missing();
  if (enabled && !state.enabled) throw conflict('the webhook is disabled');
  return c.env.ENDPOINTS.getByName(webhookId);
}
