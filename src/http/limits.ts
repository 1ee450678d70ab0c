import type { Context, MiddlewareHandler } from 'hono';
import { log } from '../core/log';
import type { AppEnv } from './app-env';
import { type ApiFailure, requestId, retryLater } from './envelope';

/** The period of every limit in wrangler.toml, in seconds: how long a limited client waits. */
export const RATE_LIMIT_PERIOD = 60;

const rateLimited = (detail: string) => retryLater(429, detail, RATE_LIMIT_PERIOD);

/**
 * Asks a Workers rate limiter whether `key` may go on. A missing binding limits nothing, and a
 * limiter that fails lets the request through (logged): an outage of the limiter must not take
 * the API down with it.
 */
async function allowed(c: Context<AppEnv>, limiter: RateLimit | undefined, key: string): Promise<boolean> {
  if (limiter === undefined) return true;
  try {
    return (await limiter.limit({ key })).success;
  } catch (err) {
    log('warn', { request_id: requestId(c), msg: 'rate limiter failed; request let through' }, err);
    return true;
  }
}

/** Limits requests per verified application (APP_RATE_LIMITER). */
export const limitApplication: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!(await allowed(c, c.env.APP_RATE_LIMITER, `app:${c.get('appId')}`))) {
    throw rateLimited('application rate limit exceeded');
  }
  await next();
};

/**
 * Limits publishing per publisher (PUBLISH_RATE_LIMITER): a limiter of its own, so platform
 * services never count on the applications' limiter, whatever they send (one event or a batch).
 */
export const limitPublisher: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!(await allowed(c, c.env.PUBLISH_RATE_LIMITER, `publisher:${c.get('appId')}`))) {
    throw rateLimited('publisher rate limit exceeded');
  }
  await next();
};

/**
 * Counts a failed authentication against the client address (AUTH_FAILURE_RATE_LIMITER) and
 * returns the failure to answer: the 401 itself, or a 429 once the address is over its limit.
 * Only failures are counted, so a valid token is never held back.
 */
export async function authFailure(c: Context<AppEnv>, failure: ApiFailure): Promise<ApiFailure> {
  const address = c.req.header('cf-connecting-ip') ?? 'unknown';
  return (await allowed(c, c.env.AUTH_FAILURE_RATE_LIMITER, `ip:${address}`))
    ? failure
    : rateLimited('too many failed authentications from this address');
}
