// The Cron Trigger (every minute, wrangler.toml [triggers]): Idempotency-Keys past 24 hours
// purged. Deliveries need no Cron: each endpoint's object has its alarm, and each object purges
// what is past the retention.

import { log } from './core/log';
import { purgeExpiredKeys } from './webhooks/store/keys';

async function job(name: string, cron: string, run: () => Promise<number>): Promise<void> {
  try {
    log('info', { msg: `cron: ${name}`, cron, rows: await run() });
  } catch (err) {
    // Logged, not thrown: the next run tries again.
    log('error', { msg: `cron: ${name} failed`, cron }, err);
  }
}

export async function runCron(controller: ScheduledController, env: CloudflareBindings): Promise<void> {
  await job('expired idempotency keys purged', controller.cron, () => purgeExpiredKeys(env.DB));
}
