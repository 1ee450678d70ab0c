// The Cron Trigger (every minute, wrangler.toml [triggers]): the move of the release before's
// deliveries from D1 to the Durable Objects, the Idempotency-Keys past 24 hours purged, and the
// signing secrets re-sealed after a new key is put first in WEBHOOK_SECRET_KEYS. Each job runs
// even when another fails. Deliveries need no Cron: each endpoint's object has its alarm.

import { deliveryConfig } from './core/delivery-settings';
import { ConfigError, describeFailure } from './core/errors';
import { log } from './core/log';
import { moveFromD1 } from './deliveries/move';
import { resealSecrets } from './webhooks/reseal';
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
  await job('deliveries moved from D1', controller.cron, () => moveFromD1(env, deliveryConfig(env)));
  await job('expired idempotency keys purged', controller.cron, () => purgeExpiredKeys(env.DB));
  await job('signing secrets re-sealed', controller.cron, () => resealSecrets(env));
}
