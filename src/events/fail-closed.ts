// The one check every path that creates or revives deliveries makes first (publishing an event or
// a batch, a test event, a resend, a recovery): invalid delivery settings fail it closed, a 500
// naming the setting, before anything is stored that could not be delivered. (The events queue's
// consumer has no one to answer: what it stores waits in the endpoints' objects, which send nothing
// while the settings are invalid.)
import type { MiddlewareHandler } from 'hono';
import { deliveryConfig } from '../core/delivery-settings';
import type { AppEnv } from '../http/app-env';

export const deliverySettingsChecked: MiddlewareHandler<AppEnv> = async (c, next) => {
  deliveryConfig(c.env);
  await next();
};
