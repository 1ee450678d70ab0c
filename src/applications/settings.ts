// An application's settings as the platform sets them: GET and PUT of its retention.
import type { Context } from 'hono';
import { deliveryConfig } from '../core/delivery-settings';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { badInput, success } from '../http/envelope';
import { appIdField, queryOf, single } from '../http/params';
import { withD1 } from '../http/storage';
import { inObject } from '../platform/objects';
import { actorOf } from '../webhooks/actor';
import { applicationJson } from './representation';
import { readApplication, setRetention } from './store/applications';

/** The shortest and longest retention the platform may set, in days. */
export const MIN_RETENTION_DAYS = 1;
export const MAX_RETENTION_DAYS = 400;

/** `retention_days`: a whole number of days, MIN_RETENTION_DAYS to MAX_RETENTION_DAYS. */
export function retentionField(value: unknown): number {
  if (!Number.isInteger(value) || (value as number) < MIN_RETENTION_DAYS || (value as number) > MAX_RETENTION_DAYS) {
    throw badInput(`retention_days must be a whole number from ${MIN_RETENTION_DAYS} to ${MAX_RETENTION_DAYS}`);
  }
  return value as number;
}

/** GET /v1.0/platform/nft/application?app_id=...: the application's settings and erasure. */
export async function readApplicationSettings(c: Context<AppEnv>): Promise<Response> {
  const appId = appIdField(single(queryOf(c.req.url), 'app_id'));
  const row = await withD1(c, 'first-primary', (db) => readApplication(db, appId));
  return success(c, { value: applicationJson(appId, row, deliveryConfig(c.env).retentionDays) });
}

/**
 * PUT /v1.0/platform/nft/application {"app_id", "retention_days"}: sets the application's
 * retention in D1, then tells its object, which tells its endpoints; each applies it from its next
 * alarm (at once). Answers the settings. Repeating it is safe (a failed telling answers 503).
 */
export async function putApplicationSettings(c: Context<AppEnv>): Promise<Response> {
  const body = jsonObject((await readJsonBody(c.req.raw)).value);
  const appId = appIdField(body.app_id);
  const days = retentionField(body.retention_days);
  const row = await withD1(c, 'first-primary', (db) => setRetention(db, appId, days, actorOf(c)));
  await inObject(() => c.env.APPLICATIONS.getByName(appId).setRetention(days));
  return success(c, { value: applicationJson(appId, row, deliveryConfig(c.env).retentionDays) });
}
