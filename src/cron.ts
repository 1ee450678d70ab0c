// The Cron Trigger (every minute, wrangler.toml [triggers]): Idempotency-Keys past 24 hours
// purged, the signing secrets re-sealed after a new key is put first in WEBHOOK_SECRET_KEYS, and
// the erasures of applications whose request's own run died finished.
// Each job runs even when another fails. Deliveries need no Cron: each endpoint's object has its
// alarm, and each object purges what is past the retention.

import { finishErasures } from './applications/erasure';
import { log } from './core/log';
import { resealSecrets } from './webhooks/reseal';
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
  await job('signing secrets re-sealed', controller.cron, () => resealSecrets(env));
  await job('erasures finished', controller.cron, () => finishErasures(env));
}
