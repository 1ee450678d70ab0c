import type { Context, Next } from 'hono';
import type { HonoBase } from 'hono/hono-base';
import { authenticate } from '../auth/bearer';
import { Code, envelope, requestId } from '../http/envelope';
import { limitApplication } from '../http/limits';
import type { AppEnv } from '../types';
import { registerWebhook } from './create';
import { readWebhooks } from './read';
import { removeWebhook } from './remove';
import { updateWebhook } from './update';

/** Every operation shares one path and differs by method. */
export const WEBHOOK_PATH = '/v1.0/app/nft/webhook';
export const ALLOWED_METHODS = 'DELETE, GET, POST, PUT';

/** The operation each method asks for, as the request log names it. */
const OPERATIONS: Record<string, string> = { GET: 'query', POST: 'create', PUT: 'update', DELETE: 'delete' };

/** The operation a request asks for, for the log: null off the webhook path or for other methods. */
export const webhookOperation = (method: string, path: string) =>
  path === WEBHOOK_PATH ? (OPERATIONS[method] ?? null) : null;

const methodNotAllowed = (c: Context<AppEnv>) =>
  envelope(405, Code.methodNotAllowed, requestId(c), { headers: { allow: ALLOWED_METHODS } });

// Hono answers HEAD with the GET route; HEAD is not one of the allowed methods.
const refuseHead = async (c: Context<AppEnv>, next: Next) => {
  if (c.req.raw.method === 'HEAD') return methodNotAllowed(c);
  await next();
};

/** The webhook routes. Route, then authentication, then rate limit, then input, then storage. */
export function mountWebhooks(app: HonoBase<AppEnv>) {
  app.get(WEBHOOK_PATH, refuseHead, authenticate, limitApplication, readWebhooks);
  app.post(WEBHOOK_PATH, authenticate, limitApplication, registerWebhook);
  app.put(WEBHOOK_PATH, authenticate, limitApplication, updateWebhook);
  app.delete(WEBHOOK_PATH, authenticate, limitApplication, removeWebhook);
  app.all(WEBHOOK_PATH, methodNotAllowed);
}
