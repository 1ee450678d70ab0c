import { HonoBase } from 'hono/hono-base';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { accessLog } from './access-log';
import { authenticate } from './auth';
import { Code, envelope, failureReply, requestId, requestIdOf } from './envelope';
import { discardBody } from './input';
import { limitApplication } from './limits';
import type { AppEnv } from './types';
import { removeWebhook, updateWebhook, WEBHOOK_PATH } from './webhooks';

// RegExpRouter: strict paths (`/v1.0/app/nft/webhook/` is another, unknown path), which Hono's
// smaller Linear and Pattern routers do not give.
const app = new HonoBase<AppEnv>({ router: new RegExpRouter() });

app.use(accessLog);
// Route, then authentication, then rate limit, then input, then storage (CONTRACT §2).
app.put(WEBHOOK_PATH, authenticate, limitApplication, updateWebhook);
app.delete(WEBHOOK_PATH, authenticate, limitApplication, removeWebhook);
app.all(WEBHOOK_PATH, (c) => envelope(405, Code.methodNotAllowed, requestId(c), { allow: 'DELETE, PUT' }));
app.notFound((c) => envelope(404, Code.notFound, requestId(c)));
app.onError((err, c) => failureReply(err, c.req.method, requestId(c)));

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
} satisfies ExportedHandler<CloudflareBindings>;
