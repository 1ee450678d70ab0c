import type { HonoBase } from 'hono/hono-base';
import { authenticate, authenticateSocket, requireWrite } from '../auth/bearer';
import { deliverySettingsChecked } from '../events/fail-closed';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitApplication } from '../http/limits';
import { mountPath } from '../http/operations';
import { readEventJourney } from './journey';
import { watchDeliveries } from './live';
import { readDeliveries } from './log';
import { recover } from './recover';
import { resend } from './resend';
import { readStats } from './stats';
import { sendTestEvent } from './test-event';

export const DELIVERY_PATH = '/v1.0/app/nft/webhook/delivery';
export const TEST_EVENT_PATH = '/v1.0/app/nft/webhook/test';
export const RECOVER_PATH = '/v1.0/app/nft/webhook/recover';
export const RESEND_PATH = '/v1.0/app/nft/webhook/delivery/resend';
export const STATS_PATH = '/v1.0/app/nft/webhook/stats';
export const LIVE_PATH = '/v1.0/app/nft/webhook/delivery/live';
export const JOURNEY_PATH = '/v1.0/app/nft/event';

/**
 * What an application does with its deliveries: read the log and the stats, follow an event to
 * its deliveries, watch them live (a WebSocket), send a test event, resend a delivery, recover failures (the last three only with a
 * token that may write).
 */
export function mountDeliveries(app: HonoBase<AppEnv>) {
  const guarded = [authenticate, limitApplication];
  const writing = [authenticate, requireWrite, limitApplication];
  // Test events, recoveries and resends make deliveries: invalid delivery settings fail them closed.
  const delivering = [...writing, deliverySettingsChecked];
  mountPath(app, DELIVERY_PATH, {
    GET: { name: 'deliveries', code: Code.queryFail, handlers: [...guarded, readDeliveries] },
  });
  mountPath(app, JOURNEY_PATH, {
    GET: { name: 'event', code: Code.queryFail, handlers: [...guarded, readEventJourney] },
  });
  mountPath(app, TEST_EVENT_PATH, {
    POST: { name: 'test', code: Code.eventFail, handlers: [...delivering, sendTestEvent] },
  });
  mountPath(app, RECOVER_PATH, {
    POST: { name: 'recover', code: Code.eventFail, handlers: [...delivering, recover] },
  });
  mountPath(app, RESEND_PATH, {
    POST: { name: 'resend', code: Code.eventFail, handlers: [...delivering, resend] },
  });
  mountPath(app, STATS_PATH, {
    GET: { name: 'stats', code: Code.queryFail, handlers: [...guarded, readStats] },
  });
  // A browser's WebSocket carries its token in a subprotocol (authenticateSocket), never in the URL.
  mountPath(app, LIVE_PATH, {
    GET: { name: 'live', code: Code.queryFail, handlers: [authenticateSocket, limitApplication, watchDeliveries] },
  });
}
