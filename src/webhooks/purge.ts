import { log } from '../http/log';
import { purgeIdempotencyKeys } from './store';

/** Expired Idempotency-Keys deleted per statement, and statements per Cron run at most. */
export const PURGE_BATCH = 1000;
const PURGE_MAX_BATCHES = 100;

/** The Cron Trigger: forgets Idempotency-Keys past their 24 hours, in bounded statements. */
export async function purgeExpiredKeys(controller: ScheduledController, env: CloudflareBindings): Promise<void> {
  let purged = 0;
  for (let i = 0; i < PURGE_MAX_BATCHES; i++) {
    const n = await purgeIdempotencyKeys(env.DB, PURGE_BATCH);
    purged += n;
    if (n < PURGE_BATCH) break;
  }
  log('info', { msg: 'idempotency keys purged', cron: controller.cron, purged });
}
