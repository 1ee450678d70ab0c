import type { HonoBase } from 'hono/hono-base';
import { authenticate } from '../auth/bearer';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitApplication } from '../http/limits';
import { mountPath } from '../http/operations';
import { readDeliveries } from './log';
import { recover } from './recover';
import { sendTestEvent } from './test-event';

export const DELIVERY_PATH = '/v1.0/app/nft/webhook/delivery';
export const TEST_EVENT_PATH = '/v1.0/app/nft/webhook/test';
export const RECOVER_PATH = '/v1.0/app/nft/webhook/recover';

/** What an application does with its deliveries: read the log, send a test event, recover failures. */
export function mountDeliveries(app: HonoBase<AppEnv>) {
  const guarded = [authenticate, limitApplication];
  mountPath(app, DELIVERY_PATH, {
    GET: { name: 'deliveries', code: Code.queryFail, handlers: [...guarded, readDeliveries] },
  });
  mountPath(app, TEST_EVENT_PATH, {
    POST: { name: 'test', code: Code.eventFail, handlers: [...guarded, sendTestEvent] },
  });
  mountPath(app, RECOVER_PATH, {
    POST: { name: 'recover', code: Code.eventFail, handlers: [...guarded, recover] },
  });
}
