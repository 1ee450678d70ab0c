import type { HonoBase } from 'hono/hono-base';
import { authenticate, requireScope } from '../auth/bearer';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitApplication, limitPublisher } from '../http/limits';
import { mountPath } from '../http/operations';
import { readEventTypes } from './catalog';
import { deliverySettingsChecked } from './fail-closed';
import { publishEvent } from './publish';
import { publishBatch } from './publish-batch';

/** Where platform services publish events: one a request, or up to 100. */
export const EVENT_PATH = '/v1.0/platform/nft/event';
export const EVENTS_PATH = '/v1.0/platform/nft/events';
/** The event catalog, for applications. */
export const EVENT_TYPES_PATH = '/v1.0/app/nft/event-types';
/** The scope a token needs to publish. */
export const PUBLISH_SCOPE = 'events:publish';

/**
 * The event routes: publishing (authentication with the publish scope, then the publisher's own
 * rate limit), and the catalog (any application's token).
 */
export function mountEvents(app: HonoBase<AppEnv>) {
  const guarded = [authenticate, requireScope(PUBLISH_SCOPE), limitPublisher, deliverySettingsChecked];
  mountPath(app, EVENT_PATH, {
    POST: { name: 'publish', code: Code.eventFail, handlers: [...guarded, publishEvent] },
  });
  mountPath(app, EVENTS_PATH, {
    POST: { name: 'publish-batch', code: Code.eventFail, handlers: [...guarded, publishBatch] },
  });
  mountPath(app, EVENT_TYPES_PATH, {
    GET: { name: 'event-types', code: Code.queryFail, handlers: [authenticate, limitApplication, readEventTypes] },
  });
}
