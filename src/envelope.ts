import type { Context } from 'hono';
import { log } from './log';
import type { AppEnv } from './types';

/** Result codes of the documented interface, and the two this service adds for routing. */
export const Code = {
  success: 0,
  invalidToken: 20004,
  updateFail: 64062,
  deleteFail: 64063,
  notFound: 404,
  methodNotAllowed: 405,
  internal: 500,
} as const;
export type Code = (typeof Code)[keyof typeof Code];

const MESSAGES: Record<Code, string> = {
  [Code.success]: 'success',
  [Code.invalidToken]: 'Invalid jwt token',
  [Code.updateFail]: 'update fail',
  [Code.deleteFail]: 'delete fail',
  [Code.notFound]: 'not found',
  [Code.methodNotAllowed]: 'method not allowed',
  [Code.internal]: 'internal error',
};

/** The code every failure of an operation carries (CONTRACT §2), chosen by the request's method. */
export function operationCode(method: string): Code {
  if (method === 'PUT') return Code.updateFail;
  if (method === 'DELETE') return Code.deleteFail;
  return Code.internal;
}

// V8's (and so workerd's) Error has a stack trace limit that the standard types do not declare.
const V8Error = Error as ErrorConstructor & { stackTraceLimit: number };

/**
 * A failure that ends the request. `status` tells the reason; the envelope carries the
 * operation's code unless `code` says otherwise (authentication, routing). `detail` is a short
 * fixed text of ours (never client input) sent in `X-Error-Detail` and logged.
 */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly options: { code?: Code; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    // An expected failure is control flow: its stack is never used, and capturing one is a
    // measurable part of a rejected request's cost.
    const limit = V8Error.stackTraceLimit;
    V8Error.stackTraceLimit = 0;
    super(detail, { cause: options.cause });
    V8Error.stackTraceLimit = limit;
    this.name = 'ApiFailure';
  }
}

/** A missing or contradictory setting: the service fails closed (500) and logs `setting`. */
export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

export const badInput = (detail: string) => new ApiFailure(400, detail);

/** A failure the client may retry after `seconds` (429, 503): says so in `Retry-After`. */
export const retryLater = (status: number, detail: string, seconds: number, cause?: unknown) =>
  new ApiFailure(status, detail, { headers: { 'retry-after': String(seconds) }, cause });
export const notFound = () => new ApiFailure(404, 'no such webhook for this application');

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;

/** The request's id: a sane incoming `X-Request-Id` is kept, otherwise a new UUID. */
export function requestIdOf(req: Request): string {
  const incoming = req.headers.get('x-request-id');
  return incoming !== null && REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
}

/** The request id of a Hono context, computed once per request. */
export function requestId(c: Context<AppEnv>): string {
  let id = c.get('requestId');
  if (id === undefined) {
    id = requestIdOf(c.req.raw);
    c.set('requestId', id);
  }
  return id;
}

// What each reply said, for the request log.
const replies = new WeakMap<Response, { code: Code; detail?: string }>();

/** The code (and failure detail) a reply of ours carries. */
export const replyInfo = (res: Response) => replies.get(res);

/** Builds every reply of the service: the `{return, message}` body and the common headers. */
export function envelope(
  status: number,
  code: Code,
  reqId: string,
  headers?: Record<string, string>,
  detail?: string,
): Response {
  const res = new Response(`{"return":${code},"message":"${MESSAGES[code]}"}`, {
    status,
    headers: {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-request-id': reqId,
      ...headers,
    },
  });
  replies.set(res, { code, detail });
  return res;
}

export const success = (c: Context<AppEnv>) => envelope(200, Code.success, requestId(c));

/** The reply for a failure: known ones as they say, anything else a logged 500. */
export function failureReply(err: unknown, method: string, reqId: string): Response {
  if (err instanceof ApiFailure) {
    // Details of a server-side failure go to the log, not to the client.
    const serverSide = err.status >= 500;
    if (serverSide) log('error', { request_id: reqId, msg: err.detail }, err.cause);
    const headers = serverSide ? err.options.headers : { 'x-error-detail': err.detail, ...err.options.headers };
    return envelope(err.status, err.options.code ?? operationCode(method), reqId, headers, err.detail);
  }
  const detail =
    err instanceof ConfigError ? `configuration error: ${err.setting}: ${err.message}` : 'unexpected error';
  log('error', { request_id: reqId, msg: detail }, err instanceof ConfigError ? undefined : err);
  return envelope(500, operationCode(method), reqId, undefined, detail);
}
