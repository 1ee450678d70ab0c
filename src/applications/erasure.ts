// Erasing an application: DELETE asks for it (202 at once) and starts it; the steps each find
// nothing to do a second time, so a run that dies is finished by the next (the Cron Trigger's,
// every minute), and two runs at once do no harm.
import type { Context } from 'hono';
import { log } from '../core/log';
import { PLATFORM_ENDPOINT } from '../core/operational-settings';
import type { AppEnv } from '../http/app-env';
import { requestId, success } from '../http/envelope';
import { appIdField, queryOf, single } from '../http/params';
import { withD1 } from '../http/storage';
import { retryD1 } from '../platform/d1';
import { actorOf } from '../webhooks/actor';
import { deleteArchives } from './archives';
import { countErased, eraseInD1, erasuresUnderWay, finishErasureInD1, requestErasure } from './store/applications';

/** Erasures one Cron run finishes at most. */
const ERASURES_PER_RUN = 10;

/**
 * DELETE /v1.0/platform/nft/application?app_id=...: 202 once the erasure is asked for; it runs
 * after the reply (and the Cron Trigger finishes it should that run die). A second DELETE while
 * one is under way changes nothing.
 */
export async function eraseApplication(c: Context<AppEnv>): Promise<Response> {
  const appId = appIdField(single(queryOf(c.req.url), 'app_id'));
  await withD1(c, 'first-primary', (db) => requestErasure(db, appId, actorOf(c)));
  const reqId = requestId(c);
  c.executionCtx.waitUntil(
    finishErasure(c.env, appId).catch((err) =>
      log('error', { request_id: reqId, msg: 'erasure failed; the Cron Trigger finishes it' }, err),
    ),
  );
  return success(c, { status: 202 });
}

/**
 * Erases the application: its webhooks, secrets and Idempotency-Keys (in D1, first: publishing
 * then reaches none of its webhooks), its objects' events, deliveries, attempts, counters and
 * value sets, what the platform's operational endpoint holds of it (its operational events'
 * deliveries, their attempts and archive index), its archives in R2; then records it done, with
 * the counts, in its audit record.
 */
export async function finishErasure(env: CloudflareBindings, appId: string): Promise<void> {
  await retryD1(() => eraseInD1(env.DB, appId));
  const objects = await env.APPLICATIONS.getByName(appId).erase();
  await retryD1(() => countErased(env.DB, appId, objects));
  // After its own objects: none of them tells the platform of anything any more.
  const operational = await env.ENDPOINTS.getByName(PLATFORM_ENDPOINT).eraseApplication(appId);
  await retryD1(() => countErased(env.DB, appId, operational));
  const archives = await deleteArchives(env.HISTORY, appId);
  await retryD1(() => finishErasureInD1(env.DB, appId, { archives }));
  log('info', { msg: 'application erased', ...objects, operational, archives });
}

/** The Cron Trigger's part: finishes the erasures under way (a few per run); returns how many. */
export async function finishErasures(env: CloudflareBindings): Promise<number> {
  const appIds = await retryD1(() => erasuresUnderWay(env.DB, ERASURES_PER_RUN));
  for (const appId of appIds) await finishErasure(env, appId);
  return appIds.length;
}
