import { HonoBase } from 'hono/hono-base';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { accessLog } from './http/access-log';
import { discardBody } from './http/body';
import { bookmarkHeader, Code, envelope, failureReply, requestId, requestIdOf } from './http/envelope';
import type { AppEnv } from './types';
import { purgeExpiredKeys } from './webhooks/purge';
import { mountWebhooks, webhookOperation } from './webhooks/routes';

// The main module exports the handlers only: workerd refuses any other named export.

// RegExpRouter: strict paths (`/v1.0/app/nft/webhook/` is another, unknown path), which Hono's
// smaller Linear and Pattern routers do not give.
const app = new HonoBase<AppEnv>({ router: new RegExpRouter() });

app.use(accessLog(webhookOperation));
mountWebhooks(app);
app.notFound((c) => envelope(404, Code.notFound, requestId(c)));
app.onError((err, c) => failureReply(err, c.req.method, requestId(c), bookmarkHeader(c)));

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

  // The Cron Trigger (wrangler.toml [triggers]).
  scheduled: purgeExpiredKeys,
} satisfies ExportedHandler<CloudflareBindings>;
