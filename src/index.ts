// The Worker: HTTP (the app), the events queue it consumes, and the Cron Trigger.
// The main module exports the handlers and the Durable Object classes only: workerd refuses any
// other named export.
import { app } from './app';
import { log } from './core/log';
import { runCron } from './cron';
import { consumeEvents } from './events/consumer';
import { discardBody } from './http/body';
import { failureReply, requestIdOf } from './http/envelope';
import { operationCode } from './http/operations';

/** The queue this Worker consumes (wrangler.toml [[queues.consumers]]), by name: environments add a suffix. */
const EVENTS_QUEUE = /^nft-webhook-events(-\w+)?$/;

export { Endpoint } from './deliveries/endpoint';
export { Application } from './events/application';

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
    if (EVENTS_QUEUE.test(batch.queue)) return consumeEvents(batch, env);
    log('error', { msg: 'a batch from a queue this Worker does not consume was retried', queue: batch.queue });
    batch.retryAll();
  },

  // The Cron Trigger (wrangler.toml [triggers]).
  scheduled: runCron,
} satisfies ExportedHandler<CloudflareBindings>;
