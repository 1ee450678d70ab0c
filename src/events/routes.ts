import type { HonoBase } from 'hono/hono-base';
import { authenticate, requireScope } from '../auth/bearer';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitPublisher } from '../http/limits';
import { mountPath } from '../http/operations';
import { publishEvent } from './publish';
import { publishBatch } from './publish-batch';

/** Where platform services publish events: one a request, or up to 100. */
export const EVENT_PATH = '/v1.0/platform/nft/event';
export const EVENTS_PATH = '/v1.0/platform/nft/events';
/** The scope a token needs to publish. */
export const PUBLISH_SCOPE = 'events:publish';

/** The event routes: authentication with the publish scope, then the publisher's own rate limit. */
export function mountEvents(app: HonoBase<AppEnv>) {
  const guarded = [authenticate, requireScope(PUBLISH_SCOPE), limitPublisher];
  mountPath(app, EVENT_PATH, {
    POST: { name: 'publish', code: Code.eventFail, handlers: [...guarded, publishEvent] },
  });
  mountPath(app, EVENTS_PATH, {
    POST: { name: 'publish-batch', code: Code.eventFail, handlers: [...guarded, publishBatch] },
  });
}
