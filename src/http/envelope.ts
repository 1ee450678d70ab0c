import type { Context } from 'hono';
import { ConfigError, InvalidInput, StorageFailure } from '../core/errors';
import { log } from '../core/log';
import type { AppEnv } from './app-env';
import { withoutOws } from './headers';

/**
 * Result codes: the documented interface's (PUT 64062, DELETE 64063), the extension's (GET of
 * webhooks and deliveries 64060, POST of a webhook 64061, events 64064, signing secrets 64065,
 * applications 64066),
 * and the ones this service adds for routing.
 */
export const Code = {
  success: 0,
  invalidToken: 20004,
  queryFail: 64060,
  createFail: 64061,
  updateFail: 64062,
  deleteFail: 64063,
  eventFail: 64064,
  secretFail: 64065,
  applicationFail: 64066,
  notFound: 404,
  methodNotAllowed: 405,
  internal: 500,
} as const;
export type Code = (typeof Code)[keyof typeof Code];

const MESSAGES: Record<Code, string> = {
  [Code.success]: 'success',
  [Code.invalidToken]: 'Invalid jwt token',
  [Code.queryFail]: 'query fail',
  [Code.createFail]: 'create fail',
  [Code.updateFail]: 'update fail',
  [Code.deleteFail]: 'delete fail',
  [Code.eventFail]: 'event fail',
  [Code.secretFail]: 'secret fail',
  [Code.applicationFail]: 'application fail',
  [Code.notFound]: 'not found',
  [Code.methodNotAllowed]: 'method not allowed',
  [Code.internal]: 'internal error',
};

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

export const badInput = (detail: string) => new ApiFailure(400, detail);

/** Seconds a client should wait after a 503 caused by storage. */
export const STORAGE_RETRY_AFTER = 2;

/** A failure the client may retry after `seconds` (429, 503): says so in `Retry-After`. */
export const retryLater = (status: number, detail: string, seconds: number, cause?: unknown) =>
  new ApiFailure(status, detail, { headers: { 'retry-after': String(seconds) }, cause });
export const notFound = (detail = 'no such webhook for this application') => new ApiFailure(404, detail);
export const conflict = (detail: string) => new ApiFailure(409, detail);

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;

/**
 * The request's id: a sane incoming `X-Request-Id` (without the whitespace around it) is kept,
 * otherwise a new UUID.
 */
export function requestIdOf(req: Request): string {
  const sent = req.headers.get('x-request-id');
  const incoming = sent === null ? null : withoutOws(sent);
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

/** What a reply carries besides its status and code. */
export interface ReplyParts {
  headers?: Record<string, string>;
  /** The failure's reason, for the log (and X-Error-Detail on a 4xx). */
  detail?: string;
  /** JSON text of the data a successful POST or GET returns, spliced in as `value`. */
  value?: string;
}

/**
 * Builds every reply of the service: the `{return, message}` body (with `value` only when given:
 * a successful POST or GET) and the common headers. `value` is JSON text made by us, so int64 ids
 * in it keep their exact digits.
 */
export function envelope(
  status: number,
  code: Code,
  reqId: string,
  { headers, detail, value }: ReplyParts = {},
): Response {
  const head = `{"return":${code},"message":"${MESSAGES[code]}"`;
  const res = new Response(value === undefined ? `${head}}` : `${head},"value":${value}}`, {
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

/** The D1 bookmark header: on every reply of a request that used D1; none before any query. */
export function bookmarkHeader(c: Context<AppEnv>): Record<string, string> | undefined {
  const bookmark = c.get('bookmark');
  return bookmark === undefined || bookmark === null ? undefined : { 'x-d1-bookmark': bookmark };
}

/** A success: 200, or `status` (201) with `value` and more `headers`; plus the D1 bookmark. */
export function success(
  c: Context<AppEnv>,
  { status = 200, value, headers }: { status?: number; value?: string; headers?: Record<string, string> } = {},
): Response {
  return envelope(status, Code.success, requestId(c), { headers: { ...bookmarkHeader(c), ...headers }, value });
}

/**
 * The reply for a failure: known ones as they say (input that a rule refuses: 400 with its
 * detail), anything else a logged 500, with the operation's `code` unless the failure names its
 * own. `headers` are added to it (the D1 bookmark of a request that used D1).
 */
export function failureReply(err: unknown, code: Code, reqId: string, headers?: Record<string, string>): Response {
  if (err instanceof InvalidInput) err = badInput(err.detail);
  if (err instanceof StorageFailure) {
    // A store that may answer again soon is a 503 the client can retry; a broken one a 500.
    err = err.retryable
      ? retryLater(503, err.detail, STORAGE_RETRY_AFTER, err.cause)
      : new ApiFailure(500, err.detail, { cause: err.cause });
  }
  if (err instanceof ApiFailure) {
    // Details of a server-side failure go to the log, not to the client.
    const serverSide = err.status >= 500;
    if (serverSide) log('error', { request_id: reqId, msg: err.detail }, err.cause);
    return envelope(err.status, err.options.code ?? code, reqId, {
      headers: serverSide
        ? { ...headers, ...err.options.headers }
        : { ...headers, 'x-error-detail': err.detail, ...err.options.headers },
      detail: err.detail,
    });
  }
  const detail =
    err instanceof ConfigError ? `configuration error: ${err.setting}: ${err.message}` : 'unexpected error';
  log('error', { request_id: reqId, msg: detail }, err instanceof ConfigError ? undefined : err);
  return envelope(500, code, reqId, { headers, detail });
}
