// The Cron Trigger (every minute, wrangler.toml [triggers]): overdue deliveries queued again, then
// the retention purges. Each job runs even when another fails.

import { deliveryConfig } from './core/delivery-settings';
import { ConfigError, describeFailure } from './core/errors';
import { log } from './core/log';
import { purgeExpiredDeliveries, requeueOverdue } from './deliveries/maintenance';
import { purgeExpiredKeys } from './webhooks/store/keys';

async function job(name: string, cron: string, run: () => Promise<number>): Promise<void> {
  try {
    log('info', { msg: `cron: ${name}`, cron, rows: await run() });
  } catch (err) {
    const config = err instanceof ConfigError;
    log(
      'error',
      { msg: `cron: ${name} failed${config ? `: ${describeFailure(err)}` : ''}`, cron },
      config ? undefined : err,
    );
  }
}

export async function runCron(controller: ScheduledController, env: CloudflareBindings): Promise<void> {
  await job('overdue deliveries queued again', controller.cron, () => requeueOverdue(env, deliveryConfig(env)));
  await job('expired deliveries purged', controller.cron, () => purgeExpiredDeliveries(env, deliveryConfig(env)));
  await job('expired idempotency keys purged', controller.cron, () => purgeExpiredKeys(env.DB));
}
