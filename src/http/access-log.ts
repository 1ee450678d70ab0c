import type { MiddlewareHandler } from 'hono';
import { log } from '../core/log';
import type { AppEnv } from './app-env';
import { replyInfo, requestId } from './envelope';

/**
 * One line per request: request id, application, operation (`operationOf` the request: null
 * off the routes), webhook id, return code, status, duration (the runtime's clock, which advances
 * with I/O) and D1 attempts.
 */
export const accessLog =
  (operationOf: (method: string, path: string) => string | null): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    const started = Date.now();
    await next();
    const reply = replyInfo(c.res);
    log('info', {
      msg: 'request',
      request_id: requestId(c),
      method: c.req.method,
      path: c.req.path.slice(0, 200),
      op: operationOf(c.req.method, c.req.path),
      app_id: c.get('appId') ?? null,
      webhook_id: c.get('webhookId') ?? null,
      status: c.res.status,
      return: reply?.code ?? null,
      detail: reply?.detail ?? null,
      duration_ms: Date.now() - started,
      d1_attempts: c.get('d1Attempts') ?? 0,
    });
  };
