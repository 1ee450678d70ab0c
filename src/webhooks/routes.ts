import type { MiddlewareHandler } from 'hono';
import type { HonoBase } from 'hono/hono-base';
import { authenticate, requireWrite } from '../auth/bearer';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitApplication } from '../http/limits';
import { mountPath } from '../http/operations';
import { registerWebhook } from './create';
import { editWebhook } from './patch';
import { readWebhooks } from './read';
import { removeWebhook } from './remove';
import { readSecret, rotateWebhookSecret } from './secret';
import { updateWebhook } from './update';

/** The webhook operations share one path and differ by method (the documented interface: PUT, DELETE; then GET, POST, PATCH). */
export const WEBHOOK_PATH = '/v1.0/app/nft/webhook';
export const SECRET_PATH = '/v1.0/app/nft/webhook/secret';

/** Every route: authentication, then the application's rate limit, then the operation (input, then storage). */
const guarded = [authenticate, limitApplication];
/**
 * Every route that changes something, and reading a signing secret (whoever holds one can forge
 * the application's webhooks): authentication, a token that may write, the rate limit, the operation.
 */
const writing = [authenticate, requireWrite, limitApplication];

/**
 * The webhook routes. `afterDelete`: steps of DELETE before its handler, from the layers above
 * (what goes with a deleted webhook: its value set).
 */
export function mountWebhooks(app: HonoBase<AppEnv>, afterDelete: MiddlewareHandler<AppEnv>[] = []) {
  mountPath(app, WEBHOOK_PATH, {
    GET: { name: 'query', code: Code.queryFail, handlers: [...guarded, readWebhooks] },
    POST: { name: 'create', code: Code.createFail, handlers: [...writing, registerWebhook] },
    PUT: { name: 'update', code: Code.updateFail, handlers: [...writing, updateWebhook] },
    PATCH: { name: 'patch', code: Code.updateFail, handlers: [...writing, editWebhook] },
    DELETE: { name: 'delete', code: Code.deleteFail, handlers: [...writing, ...afterDelete, removeWebhook] },
  });
  mountPath(app, SECRET_PATH, {
    GET: { name: 'secret', code: Code.secretFail, handlers: [...writing, readSecret] },
    POST: { name: 'rotate', code: Code.secretFail, handlers: [...writing, rotateWebhookSecret] },
  });
}
