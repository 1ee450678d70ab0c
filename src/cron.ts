// The Cron Trigger (every minute, wrangler.toml [triggers]): overdue deliveries queued again, then
// the retention purges. Each job runs even when another fails.
import { deliveryConfig } from './deliveries/config';
import { purgeExpiredDeliveries, requeueOverdue } from './deliveries/maintenance';
import { ConfigError } from './http/envelope';
import { log } from './http/log';
import { purgeExpiredKeys } from './webhooks/purge';

async function job(name: string, cron: string, run: () => Promise<number>): Promise<void> {
  try {
    log('info', { msg: `cron: ${name}`, cron, rows: await run() });
  } catch (err) {
    const detail = err instanceof ConfigError ? `: configuration error: ${err.setting}: ${err.message}` : '';
    log('error', { msg: `cron: ${name} failed${detail}`, cron }, err instanceof ConfigError ? undefined : err);
  }
}

export async function runCron(controller: ScheduledController, env: CloudflareBindings): Promise<void> {
  await job('overdue deliveries queued again', controller.cron, () => requeueOverdue(env, deliveryConfig(env)));
  await job('expired deliveries purged', controller.cron, () => purgeExpiredDeliveries(env, deliveryConfig(env)));
  await job('expired idempotency keys purged', controller.cron, () => purgeExpiredKeys(env));
}
