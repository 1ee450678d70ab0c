import type { HonoBase } from 'hono/hono-base';
import { authenticate } from '../auth/bearer';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitApplication } from '../http/limits';
import { mountPath } from '../http/operations';
import { registerWebhook } from './create';
import { readWebhooks } from './read';
import { removeWebhook } from './remove';
import { readSecret, rotateWebhookSecret } from './secret';
import { updateWebhook } from './update';

/** The webhook operations share one path and differ by method (the documented interface: PUT, DELETE). */
export const WEBHOOK_PATH = '/v1.0/app/nft/webhook';
export const SECRET_PATH = '/v1.0/app/nft/webhook/secret';

/** Every route: authentication, then the application's rate limit, then the operation (input, then storage). */
const guarded = [authenticate, limitApplication];

/** The webhook routes. */
export function mountWebhooks(app: HonoBase<AppEnv>) {
  mountPath(app, WEBHOOK_PATH, {
    GET: { name: 'query', code: Code.queryFail, handlers: [...guarded, readWebhooks] },
    POST: { name: 'create', code: Code.createFail, handlers: [...guarded, registerWebhook] },
    PUT: { name: 'update', code: Code.updateFail, handlers: [...guarded, updateWebhook] },
    DELETE: { name: 'delete', code: Code.deleteFail, handlers: [...guarded, removeWebhook] },
  });
  mountPath(app, SECRET_PATH, {
    GET: { name: 'secret', code: Code.secretFail, handlers: [...guarded, readSecret] },
    POST: { name: 'rotate', code: Code.secretFail, handlers: [...guarded, rotateWebhookSecret] },
  });
}
