import { HonoBase } from 'hono/hono-base';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { runCron } from './cron';
import { consumeDeliveries } from './deliveries/consumer';
import { mountDeliveries } from './deliveries/routes';
import { consumeEvents } from './events/consumer';
import { mountEvents } from './events/routes';
import { accessLog } from './http/access-log';
import { discardBody } from './http/body';
import { bookmarkHeader, Code, envelope, failureReply, requestId, requestIdOf } from './http/envelope';
import { log } from './http/log';
import { operationCode, operationOf } from './http/operations';
import { mountPortal } from './portal/serve';
import type { AppEnv } from './types';
import { mountWebhooks } from './webhooks/routes';

// The main module exports the handlers only: workerd refuses any other named export.

// RegExpRouter: strict paths (`/v1.0/app/nft/webhook/` is another, unknown path), which Hono's
// smaller Linear and Pattern routers do not give.
const app = new HonoBase<AppEnv>({ router: new RegExpRouter() });

app.use(accessLog((method, path) => operationOf(method, path)?.name ?? null));
mountWebhooks(app);
mountDeliveries(app);
mountEvents(app);
mountPortal(app);
app.notFound((c) => envelope(404, Code.notFound, requestId(c)));
app.onError((err, c) => failureReply(err, operationCode(c.req.method, c.req.path), requestId(c), bookmarkHeader(c)));

/** The queues this Worker consumes (wrangler.toml [[queues.consumers]]), by name: environments add a suffix. */
const EVENTS_QUEUE = /^nft-webhook-events(-\w+)?$/;
const DELIVERIES_QUEUE = /^nft-webhook-deliveries(-\w+)?$/;

export default {
  async fetch(request, env, ctx) {
    let response: Response;
    try {
      response = await app.fetch(request, env, ctx);
    } catch (err) {
      // The last line of defence: whatever escapes Hono still answers an envelope.
      const path = new URL(request.url).pathname;
      response = failureReply(err, operationCode(request.method, path), requestIdOf(request));
    }
    await discardBody(request);
    return response;
  },

  async queue(batch, env) {
    if (DELIVERIES_QUEUE.test(batch.queue)) return consumeDeliveries(batch, env);
    if (EVENTS_QUEUE.test(batch.queue)) return consumeEvents(batch, env);
    log('error', { msg: 'a batch from a queue this Worker does not consume was retried', queue: batch.queue });
    batch.retryAll();
  },

  // The Cron Trigger (wrangler.toml [triggers]).
  scheduled: runCron,
} satisfies ExportedHandler<CloudflareBindings>;
