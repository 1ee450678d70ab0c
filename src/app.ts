// The HTTP application: every route, the request log, 404 and the error handler.
import { HonoBase } from 'hono/hono-base';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { mountApplications } from './applications/routes';
import { mountDeliveries } from './deliveries/routes';
import { mountEvents } from './events/routes';
import { mountFilters } from './filters/routes';
import { accessLog } from './http/access-log';
import type { AppEnv } from './http/app-env';
import { bookmarkHeader, Code, envelope, failureReply, requestId } from './http/envelope';
import { operationCode, operationOf } from './http/operations';
import { mountPortal } from './portal/serve';
import { mountWebhooks } from './webhooks/routes';

// RegExpRouter: strict paths (`/v1.0/app/nft/webhook/` is another, unknown path), which Hono's
// smaller Linear and Pattern routers do not give.
export const app = new HonoBase<AppEnv>({ router: new RegExpRouter() });

app.use(accessLog((method, path) => operationOf(method, path)?.name ?? null));
mountWebhooks(app);
mountDeliveries(app);
mountEvents(app);
mountFilters(app);
mountApplications(app);
mountPortal(app);
app.notFound((c) => envelope(404, Code.notFound, requestId(c)));
app.onError((err, c) => failureReply(err, operationCode(c.req.method, c.req.path), requestId(c), bookmarkHeader(c)));
