import type { HonoBase } from 'hono/hono-base';
import { authenticate, requireScope } from '../auth/bearer';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitApplication } from '../http/limits';
import { mountPath } from '../http/operations';
import { readEventTypes } from './catalog';
import { publishEvent } from './publish';

/** Where platform services publish events. */
export const EVENT_PATH = '/v1.0/platform/nft/event';
/** The event catalog, for applications. */
export const EVENT_TYPES_PATH = '/v1.0/app/nft/event-types';
/** The scope a token needs to publish. */
export const PUBLISH_SCOPE = 'events:publish';

/** The event routes: publishing (authentication with the publish scope, then the publisher's rate limit), and the catalog. */
export function mountEvents(app: HonoBase<AppEnv>) {
  mountPath(app, EVENT_PATH, {
    POST: {
      name: 'publish',
      code: Code.eventFail,
      handlers: [authenticate, requireScope(PUBLISH_SCOPE), limitApplication, publishEvent],
    },
  });
  mountPath(app, EVENT_TYPES_PATH, {
    GET: { name: 'event-types', code: Code.queryFail, handlers: [authenticate, limitApplication, readEventTypes] },
  });
}
