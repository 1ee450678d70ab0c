import type { HonoBase } from 'hono/hono-base';
import { authenticate, requireScope } from '../auth/bearer';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitPublisher } from '../http/limits';
import { mountPath } from '../http/operations';
import { eraseApplication } from './erasure';
import { putApplicationSettings, readApplicationSettings } from './settings';

/** Where the platform sets an application's retention, reads it, and erases the application. */
export const APPLICATION_PATH = '/v1.0/platform/nft/application';
/** The scope a token needs for them. */
export const ADMIN_SCOPE = 'platform:admin';

/**
 * The application routes, for the platform's services only: a token with the platform:admin
 * scope, limited by the platform's own limiter (never the applications').
 */
export function mountApplications(app: HonoBase<AppEnv>) {
  const guarded = [authenticate, requireScope(ADMIN_SCOPE), limitPublisher];
  mountPath(app, APPLICATION_PATH, {
    GET: { name: 'application-read', code: Code.applicationFail, handlers: [...guarded, readApplicationSettings] },
    PUT: { name: 'application-update', code: Code.applicationFail, handlers: [...guarded, putApplicationSettings] },
    DELETE: { name: 'application-erase', code: Code.applicationFail, handlers: [...guarded, eraseApplication] },
  });
}
