// docs/openapi.json: the document, its schemas resolved, and assertions that a reply or a request
// body is one it describes.
import { env, SELF } from 'cloudflare:test';
import { Validator } from '@cfworker/json-schema';
import { expect } from 'vitest';
import doc from '../../docs/openapi.json';
import { faultyDb, OVERLOADED } from './database';
import { expectValue, type Webhook } from './replies';
import { fetchWith, ORIGIN, PATH, URL_ } from './requests';
import { bearer } from './tokens';

export { doc };

export type Node = Record<string, unknown>;

/** The document's node at a local `$ref`, with every `$ref` inside it resolved too. */
export function resolve(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(resolve);
  if (typeof node !== 'object' || node === null) return node;
  const ref = (node as Node).$ref;
  if (typeof ref === 'string') {
    const target = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((n, key) => (n as Node)[key], doc);
    return resolve(target);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, resolve(v)]));
}

export const validate = (schema: unknown, value: unknown) =>
  new Validator(schema as object, '2020-12', false).validate(value);

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
export const paths = doc.paths as Record<string, Partial<Record<Method, { responses: Node; requestBody?: Node }>>>;

/** The methods the document gives a path, as an `Allow` header lists them. */
export const documentedMethods = (path: string) =>
  Object.keys(paths[path] ?? {})
    .map((m) => m.toUpperCase())
    .sort()
    .join(', ');

/** Headers a reply may carry besides the ones every reply has: each must be documented where it appears. */
const OCCASIONAL_HEADERS = [
  'retry-after',
  'www-authenticate',
  'x-d1-bookmark',
  'location',
  'idempotent-replayed',
  'x-error-detail',
];

/** Asserts that `res` is a documented reply of `operation` on `path` (or of the path-level 404/405). */
export async function expectDocumented(
  res: Response,
  operation: Method | 'unknown-path' | 'other-method',
  path: string = PATH,
) {
  const body = await res.clone().json();
  if (operation === 'unknown-path' || operation === 'other-method') {
    const schema = resolve({
      $ref: `#/components/schemas/${operation === 'unknown-path' ? 'NotFound' : 'MethodNotAllowed'}`,
    });
    expect(validate(schema, body).errors).toEqual([]);
    if (operation === 'other-method') expect(res.headers.get('allow')).toBe(documentedMethods(path));
    return;
  }
  const label = `${operation.toUpperCase()} ${path} ${res.status}`;
  const documented = paths[path]?.[operation];
  expect(documented, `${operation.toUpperCase()} ${path} is documented`).toBeDefined();
  const response = resolve((documented as { responses: Node }).responses[String(res.status)]) as Node;
  expect(response, `${label} is documented`).toBeDefined();
  const schema = (response.content as Node)['application/json'] as { schema: unknown };
  expect(validate(schema.schema, body).errors, label).toEqual([]);
  const headers = response.headers as Record<string, { required?: boolean; schema: unknown }>;
  for (const [name, header] of Object.entries(headers)) {
    const value = res.headers.get(name);
    if (header.required) expect(value, `${name} on ${label}`).not.toBeNull();
    if (value !== null) expect(validate(header.schema, value).errors, `${name}: ${value}`).toEqual([]);
  }
  const names = Object.keys(headers).map((name) => name.toLowerCase());
  for (const name of OCCASIONAL_HEADERS) {
    if (res.headers.has(name)) expect(names, `${name} on ${label} is documented`).toContain(name);
  }
}

export const putRequest = (headers: Record<string, string>, body: string) =>
  new Request(URL_, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body });
export const deleteRequest = (query: string, headers: Record<string, string>) =>
  new Request(`${URL_}?${query}`, { method: 'DELETE', headers });

/** A D1 binding whose every call fails with `message`. */
export const failingDb = (message: string) => faultyDb(Array.from({ length: 10 }, () => ({ before: message }))).db;
// Failures after D1 ran the statements: the reply carries the session's bookmark.
const failingAfter = (message: string) => faultyDb(Array.from({ length: 10 }, () => ({ after: message }))).db;
export const overloaded = () => failingAfter(OVERLOADED);
export const broken = () => failingAfter('D1_ERROR: no such table');

/** A `method` request of `body` to `path`, sent as `type`: a string as it is, anything else as JSON. */
export const requestTo = (
  method: string,
  path: string,
  headers: Record<string, string>,
  body: unknown,
  type = 'application/json',
) =>
  new Request(ORIGIN + path, {
    method,
    headers: { 'content-type': type, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** A POST of `body` to `path`, sent as `type`. */
export const postTo = (path: string, headers: Record<string, string>, body: string, type = 'application/json') =>
  requestTo('POST', path, headers, body, type);

/** A webhook of `token`'s application at `https://hooks.example.com/<name>`, registered through the Worker: its id. */
export const registerAs = async (token: string, name: string) =>
  (
    await expectValue<Webhook>(
      await fetchWith({}, postTo(PATH, bearer(token), JSON.stringify({ url: `https://hooks.example.com/${name}` }))),
      201,
    )
  ).value.webhook_id;

/** A JSON body of exactly `bytes` bytes: `fields` and a padding string. */
export const sizedBody = (bytes: number, fields: Record<string, unknown> = {}) => {
  const head = JSON.stringify({ ...fields, pad: '' });
  return head.replace('"pad":""', `"pad":"${'x'.repeat(bytes - head.length)}"`);
};

/**
 * Sends each case (labelled by its expected status, then what it shows), asserts its status, that
 * it carries `X-D1-Bookmark` when its status is in `bookmarked` (unless its label says
 * `configuration`: that failure comes before D1), and that it is a documented reply of the
 * operation. Returns each success's `value` by label.
 */
export async function expectEachDocumented(
  method: Method,
  path: string,
  cases: [string, () => Promise<Response>][],
  bookmarked: string[],
): Promise<Map<string, unknown>> {
  const values = new Map<string, unknown>();
  for (const [expected, send] of cases) {
    const res = await send();
    const label = `${method.toUpperCase()} ${path} ${expected}`;
    expect(String(res.status), label).toBe(expected.slice(0, 3));
    if (bookmarked.includes(expected.slice(0, 3)) && !expected.includes('configuration')) {
      expect(res.headers.get('x-d1-bookmark'), label).not.toBeNull();
    }
    if (res.status < 300) values.set(expected, ((await res.clone().json()) as { value?: unknown }).value);
    await expectDocumented(res, method, path);
  }
  return values;
}

/** Other methods on `path` are 405 with the documented `Allow` (HEAD too), and `path/` is an unknown path. */
export async function expectOtherMethodsRefused(path: string, query: string, methods: string[], token: string) {
  for (const method of methods) {
    const res = await SELF.fetch(`${ORIGIN}${path}${query}`, { method, headers: bearer(token) });
    expect(res.status, `${method} ${path}`).toBe(405);
    if (method === 'HEAD') {
      expect(res.headers.get('allow')).toBe(documentedMethods(path));
      await res.arrayBuffer();
    } else {
      await expectDocumented(res, 'other-method', path);
    }
  }
  await expectDocumented(await SELF.fetch(`${ORIGIN}${path}/`), 'unknown-path');
}

/**
 * Sends each body to the operation: the schema of its documented request body must accept exactly
 * the bodies the Worker does not refuse (400).
 */
export async function expectSchemaAgrees(method: 'PUT' | 'POST', path: string, token: string, bodies: string[]) {
  const operation = paths[path]?.[method.toLowerCase() as Method] as { requestBody: Node } | undefined;
  expect(operation, `${method} ${path} is documented`).toBeDefined();
  const { schema } = (resolve(operation?.requestBody) as { content: Record<string, { schema: unknown }> }).content[
    'application/json'
  ] as { schema: unknown };
  for (const body of bodies) {
    const res = await fetchWith(
      {},
      new Request(ORIGIN + path, {
        method,
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body,
      }),
    );
    await res.text();
    expect(res.status, body).toBeLessThan(500);
    expect(validate(schema, JSON.parse(body)).valid, body).toBe(res.status !== 400);
  }
}

/** Bindings whose application rate limiter refuses every request. */
export const limited = { ...env, APP_RATE_LIMITER: { limit: async () => ({ success: false }) } };
/** Bindings whose publishers' rate limiter refuses every request. */
export const publishLimited = { ...env, PUBLISH_RATE_LIMITER: { limit: async () => ({ success: false }) } };
