import { HonoBase } from 'hono/hono-base';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { accessLog } from './http/access-log';
import { discardBody } from './http/body';
import { bookmarkHeader, Code, envelope, failureReply, requestId, requestIdOf } from './http/envelope';
import { log } from './http/log';
import type { AppEnv } from './types';
import { mountWebhooks } from './webhooks/routes';
import { purgeIdempotencyKeys } from './webhooks/store';

// RegExpRouter: strict paths (`/v1.0/app/nft/webhook/` is another, unknown path), which Hono's
// smaller Linear and Pattern routers do not give.
const app = new HonoBase<AppEnv>({ router: new RegExpRouter() });

app.use(accessLog);
mountWebhooks(app);
app.notFound((c) => envelope(404, Code.notFound, requestId(c)));
app.onError((err, c) => failureReply(err, c.req.method, requestId(c), bookmarkHeader(c)));

/** Expired Idempotency-Keys deleted per statement, and statements per Cron run at most. */
export const PURGE_BATCH = 1000;
const PURGE_MAX_BATCHES = 100;

export default {
  async fetch(request, env, ctx) {
    let response: Response;
    try {
      response = await app.fetch(request, env, ctx);
    } catch (err) {
      // The last line of defence: whatever escapes Hono still answers an envelope.
      response = failureReply(err, request.method, requestIdOf(request));
    }
    await discardBody(request);
    return response;
  },

  /** The Cron Trigger: forgets Idempotency-Keys past their 24 hours, in bounded statements. */
  async scheduled(controller, env) {
    let purged = 0;
    for (let i = 0; i < PURGE_MAX_BATCHES; i++) {
      const n = await purgeIdempotencyKeys(env.DB, PURGE_BATCH);
      purged += n;
      if (n < PURGE_BATCH) break;
    }
    log('info', { msg: 'idempotency keys purged', cron: controller.cron, purged });
  },
} satisfies ExportedHandler<CloudflareBindings>;
