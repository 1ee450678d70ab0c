import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { requestId } from '../http/envelope';
import type { Actor } from './store/rows';

/** Who is making a change: the verified application, its token's `jti`, the request id. */
export const actorOf = (c: Context<AppEnv>): Actor => ({
  appId: c.get('appId'),
  jti: c.get('jti'),
  requestId: requestId(c),
});
