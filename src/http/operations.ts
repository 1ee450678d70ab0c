import type { Context, MiddlewareHandler, Next } from 'hono';
import type { HonoBase } from 'hono/hono-base';
import type { AppEnv } from './app-env';
import { Code, envelope, requestId } from './envelope';

/** What the request log calls an operation, and the code its every failure carries. */
export interface Operation {
  name: string;
  code: Code;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Every mounted operation, by path and method. */
const operations = new Map<string, Map<string, Operation>>();

// Off the routes (or before mounting), a failure's code follows the method as on the webhook path.
const BY_METHOD: Record<string, Code> = {
  GET: Code.queryFail,
  POST: Code.createFail,
  PUT: Code.updateFail,
  PATCH: Code.updateFail,
  DELETE: Code.deleteFail,
};

/** The operation a request asks for: null off the routes or for a method the path does not have. */
export const operationOf = (method: string, path: string): Operation | null =>
  operations.get(path)?.get(method) ?? null;

/** The code every failure of a request carries: its operation's. */
export const operationCode = (method: string, path: string): Code =>
  operationOf(method, path)?.code ?? BY_METHOD[method] ?? Code.internal;

/** The `Allow` header of a path: its methods, sorted. */
export const allowedMethods = (path: string) => [...(operations.get(path)?.keys() ?? [])].sort().join(', ');

const methodNotAllowed = (c: Context<AppEnv>) =>
  envelope(405, Code.methodNotAllowed, requestId(c), { headers: { allow: allowedMethods(c.req.path) } });

// Hono answers HEAD with the GET route; HEAD is not one of the allowed methods.
const refuseHead = async (c: Context<AppEnv>, next: Next) => {
  if (c.req.raw.method === 'HEAD') return methodNotAllowed(c);
  await next();
};

/**
 * Mounts one path's operations, each method with its handlers (route, then authentication, then
 * rate limit, then input, then storage), and 405 with the path's own `Allow` for other methods.
 */
export function mountPath(
  app: HonoBase<AppEnv>,
  path: string,
  routes: Partial<Record<Method, Operation & { handlers: MiddlewareHandler<AppEnv>[] }>>,
) {
  const methods = new Map<string, Operation>();
  operations.set(path, methods);
  for (const [method, { name, code, handlers }] of Object.entries(routes)) {
    methods.set(method, { name, code });
    if (method === 'GET') app.get(path, refuseHead, ...handlers);
    else app.on(method, [path], ...handlers);
  }
  app.all(path, methodNotAllowed);
}
