import { createExecutionContext, createMessageBatch, env, getQueueResult, SELF } from 'cloudflare:test';
import { Validator } from '@cfworker/json-schema';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import doc from '../docs/openapi.json';
import { consumeDeliveries } from '../src/deliveries/consumer';
import { DELIVERY_PATH, RECOVER_PATH, RESEND_PATH, STATS_PATH, TEST_EVENT_PATH } from '../src/deliveries/routes';
import { EVENT_PATH, EVENT_TYPES_PATH } from '../src/events/routes';
import { Code, envelope } from '../src/http/envelope';
import { allowedMethods, operationCode } from '../src/http/operations';
import { SECRET_PATH } from '../src/webhooks/routes';
import {
  bearer,
  consume,
  DELIVERIES_QUEUE,
  eventRequest,
  expectValue,
  fakeQueue,
  faultyDb,
  fetchAndWait,
  fetchWith,
  insertWebhook,
  ORIGIN,
  PATH,
  platformToken,
  type Received,
  receiver,
  tokenFor,
  URL_,
  type Webhook,
} from './helpers';

/** The body limits the docs promise: 8 KiB for a webhook's, 64 KiB for an event's. */
const MAX_BODY_BYTES = 8192;
const MAX_EVENT_BYTES = 65536;

const SECRET_URL = ORIGIN + SECRET_PATH;
const EVENT_URL = ORIGIN + EVENT_PATH;
/** The form the docs give a signing secret: `whsec_` + padded base64 of 32 bytes. */
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

afterEach(() => {
  vi.restoreAllMocks();
});

type Node = Record<string, unknown>;

/** The document's node at a local `$ref`, with every `$ref` inside it resolved too. */
function resolve(node: unknown): unknown {
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

const validate = (schema: unknown, value: unknown) => new Validator(schema as object, '2020-12', false).validate(value);

type Method = 'get' | 'post' | 'put' | 'delete';
const paths = doc.paths as Record<string, Partial<Record<Method, { responses: Node }>>>;

/** The methods the document gives a path, as an `Allow` header lists them. */
const documentedMethods = (path: string) =>
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
async function expectDocumented(
  res: Response,
  operation: Method | 'unknown-path' | 'other-method',
  path: string = PATH,
) {
  const body = await res.json();
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

const putRequest = (headers: Record<string, string>, body: string) =>
  new Request(URL_, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body });
const deleteRequest = (query: string, headers: Record<string, string>) =>
  new Request(`${URL_}?${query}`, { method: 'DELETE', headers });

/** A D1 binding whose every call fails with `message`. */
const failingDb = (message: string) => faultyDb(Array.from({ length: 10 }, () => ({ before: message }))).db;
// Failures after D1 ran the statements: the reply carries the session's bookmark.
const failingAfter = (message: string) => faultyDb(Array.from({ length: 10 }, () => ({ after: message }))).db;
const overloaded = () => failingAfter('D1_ERROR: D1 DB is overloaded. Too many requests queued.');
const broken = () => failingAfter('D1_ERROR: no such table');

/** A POST of `body` to `path`, sent as `type`. */
const postTo = (path: string, headers: Record<string, string>, body: string, type = 'application/json') =>
  new Request(ORIGIN + path, { method: 'POST', headers: { 'content-type': type, ...headers }, body });

/** A JSON body of exactly `bytes` bytes: `fields` and a padding string. */
const sizedBody = (bytes: number, fields: Record<string, unknown> = {}) => {
  const head = JSON.stringify({ ...fields, pad: '' });
  return head.replace('"pad":""', `"pad":"${'x'.repeat(bytes - head.length)}"`);
};

/**
 * Sends each case (labelled by its expected status, then what it shows), asserts its status, that
 * it carries `X-D1-Bookmark` when its status is in `bookmarked` (unless its label says
 * `configuration`: that failure comes before D1), and that it is a documented reply of the
 * operation. Returns each success's `value` by label.
 */
async function expectEachDocumented(
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
async function expectOtherMethodsRefused(path: string, query: string, methods: string[], token: string) {
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

describe('docs/openapi.json', () => {
  it('documents every reply the suite sees: status, body schema and headers', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const token = await tokenFor('app-a');
    const id = await insertWebhook('app-a');
    const foreign = await insertWebhook('app-b');
    const limited = { ...env, APP_RATE_LIMITER: { limit: async () => ({ success: false }) } };

    const put: [string, () => Promise<Response>][] = [
      ['200', () => fetchWith({}, putRequest(bearer(token), JSON.stringify({ webhook_id: id, is_enabled: false })))],
      ['400', () => fetchWith({}, putRequest(bearer(token), '{"webhook_id": 1.5}'))],
      ['401', () => fetchWith({}, putRequest({}, '{}'))],
      ['401 invalid_token', () => fetchWith({}, putRequest(bearer('a.b.c'), '{}'))],
      [
        '404',
        () => fetchWith({}, putRequest(bearer(token), JSON.stringify({ webhook_id: foreign, is_enabled: false }))),
      ],
      ['413', () => fetchWith({}, putRequest(bearer(token), `{"pad":"${'x'.repeat(MAX_BODY_BYTES)}"}`))],
      [
        '415',
        () =>
          fetchWith(
            {},
            new Request(URL_, {
              method: 'PUT',
              headers: { ...bearer(token), 'content-type': 'text/plain' },
              body: '{}',
            }),
          ),
      ],
      ['429', () => fetchWith(limited, putRequest(bearer(token), JSON.stringify({ webhook_id: id })))],
      [
        '500',
        () =>
          fetchWith(
            { DB: failingDb('D1_ERROR: no such table') },
            putRequest(bearer(token), JSON.stringify({ webhook_id: id })),
          ),
      ],
      [
        '503',
        () =>
          fetchWith(
            { DB: failingDb('D1_ERROR: D1 DB is overloaded. Too many requests queued.') },
            putRequest(bearer(token), JSON.stringify({ webhook_id: id })),
          ),
      ],
    ];
    const del: [string, () => Promise<Response>][] = [
      ['400', () => fetchWith({}, deleteRequest('webhook_id=abc', bearer(token)))],
      ['401', () => fetchWith({}, deleteRequest(`webhook_id=${id}`, {}))],
      ['404', () => fetchWith({}, deleteRequest(`webhook_id=${foreign}`, bearer(token)))],
      ['429', () => fetchWith(limited, deleteRequest(`webhook_id=${id}`, bearer(token)))],
      [
        '500',
        () => fetchWith({ DB: failingDb('D1_ERROR: no such table') }, deleteRequest(`webhook_id=${id}`, bearer(token))),
      ],
      [
        '503',
        () =>
          fetchWith(
            { DB: failingDb('D1_ERROR: D1 DB is overloaded. Too many requests queued.') },
            deleteRequest(`webhook_id=${id}`, bearer(token)),
          ),
      ],
      ['200', () => fetchWith({}, deleteRequest(`webhook_id=${id}`, bearer(token)))],
    ];
    const tokenB = await tokenFor('app-b');
    const getRequest = (query: string, headers: Record<string, string>) => new Request(`${URL_}?${query}`, { headers });
    const get: [string, () => Promise<Response>][] = [
      ['200', () => fetchWith({}, getRequest(`webhook_id=${foreign}`, bearer(tokenB)))],
      ['200 list', () => fetchWith({}, getRequest('limit=1', bearer(token)))],
      ['400', () => fetchWith({}, getRequest('limit=0', bearer(token)))],
      ['400 bookmark', () => fetchWith({}, getRequest('', { ...bearer(token), 'x-d1-bookmark': 'first-primary' }))],
      ['401', () => fetchWith({}, getRequest('', {}))],
      ['404', () => fetchWith({}, getRequest(`webhook_id=${foreign}`, bearer(token)))],
      ['429', () => fetchWith(limited, getRequest('', bearer(token)))],
      ['500', () => fetchWith({ DB: failingDb('D1_ERROR: no such table') }, getRequest('', bearer(token)))],
      [
        '503',
        () =>
          fetchWith(
            { DB: failingDb('D1_ERROR: D1 DB is overloaded. Too many requests queued.') },
            getRequest('', bearer(token)),
          ),
      ],
    ];
    const postRequest = (headers: Record<string, string>, body: string, type = 'application/json') =>
      new Request(URL_, { method: 'POST', headers: { 'content-type': type, ...headers }, body });
    const hook = (path: string) => JSON.stringify({ url: `https://hooks.example.com/${path}` });
    const keyed = { ...bearer(token), 'idempotency-key': 'openapi' };
    const post: [string, () => Promise<Response>][] = [
      ['201', () => fetchWith({}, postRequest(keyed, hook('doc')))],
      ['201 replayed', () => fetchWith({}, postRequest(keyed, hook('doc')))],
      ['400', () => fetchWith({}, postRequest(bearer(token), JSON.stringify({ url: 'https://localhost/' })))],
      ['401', () => fetchWith({}, postRequest({}, hook('x')))],
      ['409', () => fetchWith({}, postRequest(bearer(token), hook('doc')))],
      ['413', () => fetchWith({}, postRequest(bearer(token), `{"pad":"${'x'.repeat(MAX_BODY_BYTES)}"}`))],
      ['415', () => fetchWith({}, postRequest(bearer(token), hook('x'), 'text/plain'))],
      ['422', () => fetchWith({}, postRequest(keyed, hook('other')))],
      ['429', () => fetchWith(limited, postRequest(bearer(token), hook('x')))],
      ['500', () => fetchWith({ DB: failingDb('D1_ERROR: no such table') }, postRequest(bearer(token), hook('y')))],
      [
        '503',
        () =>
          fetchWith(
            { DB: failingDb('D1_ERROR: D1 DB is overloaded. Too many requests queued.') },
            postRequest(bearer(token), hook('z')),
          ),
      ],
    ];
    for (const [expected, send] of get) {
      const res = await send();
      expect(String(res.status), `GET ${expected}`).toBe(expected.slice(0, 3));
      await expectDocumented(res, 'get');
    }
    for (const [expected, send] of post) {
      const res = await send();
      expect(String(res.status), `POST ${expected}`).toBe(expected.slice(0, 3));
      if (expected === '201 replayed') expect(res.headers.get('idempotent-replayed')).toBe('true');
      await expectDocumented(res, 'post');
    }
    for (const [expected, send] of put) {
      const res = await send();
      expect(String(res.status), `PUT ${expected}`).toBe(expected.slice(0, 3));
      await expectDocumented(res, 'put');
    }
    for (const [expected, send] of del) {
      const res = await send();
      expect(String(res.status), `DELETE ${expected}`).toBe(expected);
      await expectDocumented(res, 'delete');
    }
    await expectDocumented(await SELF.fetch(`${ORIGIN}/openapi.json`), 'unknown-path');
    await expectDocumented(await SELF.fetch(URL_, { method: 'TRACE' }), 'other-method');
  });

  it('documents every reply of reading a secret and publishing an event: status, body schema and headers', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const token = await tokenFor('app-s');
    const publisher = await tokenFor('platform-svc', { scope: 'events:publish' });
    const limited = { ...env, APP_RATE_LIMITER: { limit: async () => ({ success: false }) } };

    // A webhook registered through the API (with its secret), one stored without a secret, another application's.
    const created = await fetchWith(
      {},
      new Request(URL_, {
        method: 'POST',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'https://hooks.example.com/secret-doc', event_types: ['nft.minted'] }),
      }),
    );
    const { value: hook } = await expectValue<Webhook & { secret: string }>(created, 201);
    const legacy = await insertWebhook('app-s');
    const foreign = await insertWebhook('app-t');

    const secretRequest = (query: string, headers: Record<string, string>) =>
      new Request(`${SECRET_URL}?${query}`, { headers });
    const secret: [string, () => Promise<Response>][] = [
      ['200', () => fetchWith({}, secretRequest(`webhook_id=${hook.webhook_id}`, bearer(token)))],
      ['200 given now', () => fetchWith({}, secretRequest(`webhook_id=${legacy}`, bearer(token)))],
      [
        '200 bookmark not read',
        () =>
          fetchWith(
            {},
            secretRequest(`webhook_id=${hook.webhook_id}`, { ...bearer(token), 'x-d1-bookmark': 'first-primary' }),
          ),
      ],
      ['400', () => fetchWith({}, secretRequest('webhook_id=abc', bearer(token)))],
      ['400 missing', () => fetchWith({}, secretRequest('', bearer(token)))],
      ['400 repeated', () => fetchWith({}, secretRequest(`webhook_id=${legacy}&webhook_id=${legacy}`, bearer(token)))],
      ['401', () => fetchWith({}, secretRequest(`webhook_id=${legacy}`, {}))],
      ['401 invalid_token', () => fetchWith({}, secretRequest(`webhook_id=${legacy}`, bearer('a.b.c')))],
      ['404', () => fetchWith({}, secretRequest(`webhook_id=${foreign}`, bearer(token)))],
      ['404 missing', () => fetchWith({}, secretRequest('webhook_id=9223372036854775807', bearer(token)))],
      ['429', () => fetchWith(limited, secretRequest(`webhook_id=${legacy}`, bearer(token)))],
      ['500', () => fetchWith({ DB: broken() }, secretRequest(`webhook_id=${legacy}`, bearer(token)))],
      [
        '500 configuration',
        () => fetchWith({ WEBHOOK_SECRET_KEY: '' }, secretRequest(`webhook_id=${legacy}`, bearer(token))),
      ],
      ['503', () => fetchWith({ DB: overloaded() }, secretRequest(`webhook_id=${legacy}`, bearer(token)))],
    ];
    const secrets = new Map<string, string>();
    for (const [expected, send] of secret) {
      const res = await send();
      expect(String(res.status), `GET secret ${expected}`).toBe(expected.slice(0, 3));
      // Every reply that used D1 carries its bookmark.
      if (['200', '404', '500', '503'].includes(expected.slice(0, 3)) && expected !== '500 configuration') {
        expect(res.headers.get('x-d1-bookmark'), `GET secret ${expected}`).not.toBeNull();
      }
      if (res.status === 200) {
        secrets.set(expected, ((await res.clone().json()) as { value: { secret: string } }).value.secret);
      }
      await expectDocumented(res, 'get', SECRET_PATH);
    }
    // The secret is the one the registration showed; the one given to the older webhook stays.
    expect(secrets.get('200')).toBe(hook.secret);
    expect(secrets.get('200 given now')).toMatch(SECRET);
    const again = await fetchWith({}, secretRequest(`webhook_id=${legacy}`, bearer(token)));
    expect((await expectValue<{ secret: string }>(again)).value.secret).toBe(secrets.get('200 given now'));

    const eventRequest = (headers: Record<string, string>, body: string, type = 'application/json') =>
      new Request(EVENT_URL, { method: 'POST', headers: { 'content-type': type, ...headers }, body });
    const event = (fields: Record<string, unknown> = {}) =>
      JSON.stringify({ app_id: 'app-s', type: 'nft.minted', data: { token_id: '7' }, ...fields });
    /** An event body of exactly `bytes` bytes. */
    const sized = (bytes: number) => {
      const head = event({ data: { pad: '' } });
      return head.replace('"pad":""', `"pad":"${'x'.repeat(bytes - head.length)}"`);
    };
    const [unscoped, otherScopes, scopeArray, amongScopes] = await Promise.all([
      tokenFor('platform-svc'),
      tokenFor('platform-svc', { scope: 'events:read events:publisher' }),
      tokenFor('platform-svc', { scope: ['events:publish'] }),
      tokenFor('platform-svc', { scope: 'events:read events:publish' }),
    ]);
    expect(new TextEncoder().encode(sized(MAX_EVENT_BYTES)).byteLength).toBe(MAX_EVENT_BYTES);
    const publish: [string, () => Promise<Response>][] = [
      ['202', () => fetchWith({}, eventRequest(bearer(publisher), event({ id: 'doc-1' })))],
      ['202 same id', () => fetchWith({}, eventRequest(bearer(publisher), event({ id: 'doc-1', data: {} })))],
      ['202 no webhooks', () => fetchWith({}, eventRequest(bearer(publisher), event({ app_id: 'app-none' })))],
      ['202 among scopes', () => fetchWith({}, eventRequest(bearer(amongScopes as string), event()))],
      ['202 64 KiB', () => fetchWith({}, eventRequest(bearer(publisher), sized(MAX_EVENT_BYTES)))],
      ['400', () => fetchWith({}, eventRequest(bearer(publisher), event({ type: 'nft minted' })))],
      ['400 JSON', () => fetchWith({}, eventRequest(bearer(publisher), '{"app_id":'))],
      ['401', () => fetchWith({}, eventRequest({}, event()))],
      ['401 invalid_token', () => fetchWith({}, eventRequest(bearer('a.b.c'), event()))],
      ['403', () => fetchWith({}, eventRequest(bearer(unscoped as string), event()))],
      ['403 other scopes', () => fetchWith({}, eventRequest(bearer(otherScopes as string), event()))],
      ['403 scope not a string', () => fetchWith({}, eventRequest(bearer(scopeArray as string), event()))],
      ['413', () => fetchWith({}, eventRequest(bearer(publisher), sized(MAX_EVENT_BYTES + 1)))],
      ['415', () => fetchWith({}, eventRequest(bearer(publisher), event(), 'text/plain'))],
      ['429', () => fetchWith(limited, eventRequest(bearer(publisher), event()))],
      ['500', () => fetchWith({ DB: broken() }, eventRequest(bearer(publisher), event()))],
      ['503', () => fetchWith({ DB: overloaded() }, eventRequest(bearer(publisher), event()))],
    ];
    const eventIds = new Map<string, string>();
    for (const [expected, send] of publish) {
      const res = await send();
      expect(String(res.status), `POST event ${expected}`).toBe(expected.slice(0, 3));
      if (res.status === 202) {
        const { value } = await expectValue<{ event_id: string }>(res.clone(), 202);
        eventIds.set(expected, value.event_id);
      }
      if (['202', '500', '503'].includes(expected.slice(0, 3))) {
        expect(res.headers.get('x-d1-bookmark'), `POST event ${expected}`).not.toBeNull();
      }
      if (res.status === 403) {
        expect(res.headers.get('www-authenticate')).toBe(
          'Bearer realm="nft-webhook", error="insufficient_scope", scope="events:publish"',
        );
      }
      await expectDocumented(res, 'post', EVENT_PATH);
    }
    // The same id for the same application is one event: one row, and its deliveries made once.
    expect(eventIds.get('202 same id')).toBe(eventIds.get('202'));
    const stored = await env.DB.prepare(
      `SELECT (SELECT COUNT(*) FROM events WHERE app_id = 'app-s' AND source_key = 'id:doc-1') AS events,
              (SELECT COUNT(*) FROM deliveries WHERE event_id = ?1) AS deliveries`,
    )
      .bind(eventIds.get('202'))
      .first<{ events: number; deliveries: number }>();
    // Two webhooks of app-s receive nft.minted: the registered one (its event_types) and the stored one (every type).
    expect(stored).toEqual({ events: 1, deliveries: 2 });

    for (const [path, method, query] of [
      [SECRET_PATH, 'PUT', '?webhook_id=1'],
      [SECRET_PATH, 'HEAD', '?webhook_id=1'],
      [SECRET_PATH, 'DELETE', '?webhook_id=1'],
      [EVENT_PATH, 'GET', ''],
      [EVENT_PATH, 'PUT', ''],
      [EVENT_PATH, 'OPTIONS', ''],
    ] as const) {
      const res = await SELF.fetch(`${ORIGIN}${path}${query}`, { method, headers: bearer(publisher) });
      expect(res.status, `${method} ${path}`).toBe(405);
      if (method === 'HEAD') {
        expect(res.headers.get('allow')).toBe(documentedMethods(path));
        await res.arrayBuffer();
      } else {
        await expectDocumented(res, 'other-method', path);
      }
    }
    await expectDocumented(await SELF.fetch(`${ORIGIN}${SECRET_PATH}/`), 'unknown-path');
  });

  it('documents every reply of rotating a secret; a delivery then carries both signatures, new first', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const token = await tokenFor('app-r');
    const limited = { ...env, APP_RATE_LIMITER: { limit: async () => ({ success: false }) } };
    const created = await fetchWith(
      {},
      postTo(PATH, bearer(token), JSON.stringify({ url: 'https://hooks.example.com/rotate' })),
    );
    const { value: hook } = await expectValue<Webhook & { secret: string }>(created, 201);
    // Stored without a secret: its first rotation gives it one.
    const legacy = await insertWebhook('app-r');
    const foreign = await insertWebhook('app-q');
    const rotate = (headers: Record<string, string>, body: unknown, type?: string) =>
      postTo(SECRET_PATH, headers, typeof body === 'string' ? body : JSON.stringify(body), type);

    const values = await expectEachDocumented(
      'post',
      SECRET_PATH,
      [
        ['200', () => fetchWith({}, rotate(bearer(token), { webhook_id: hook.webhook_id }))],
        ['200 string id, no secret before', () => fetchWith({}, rotate(bearer(token), { webhook_id: legacy }))],
        ['400', () => fetchWith({}, rotate(bearer(token), { webhook_id: 'x' }))],
        ['400 missing', () => fetchWith({}, rotate(bearer(token), {}))],
        ['400 JSON', () => fetchWith({}, rotate(bearer(token), '['))],
        ['401', () => fetchWith({}, rotate({}, { webhook_id: legacy }))],
        ['401 invalid_token', () => fetchWith({}, rotate(bearer('a.b.c'), { webhook_id: legacy }))],
        ['404', () => fetchWith({}, rotate(bearer(token), { webhook_id: foreign }))],
        ['404 missing', () => fetchWith({}, rotate(bearer(token), { webhook_id: '9223372036854775807' }))],
        ['413', () => fetchWith({}, rotate(bearer(token), sizedBody(MAX_BODY_BYTES + 1, { webhook_id: legacy })))],
        ['415', () => fetchWith({}, rotate(bearer(token), { webhook_id: legacy }, 'text/plain'))],
        ['429', () => fetchWith(limited, rotate(bearer(token), { webhook_id: legacy }))],
        ['500', () => fetchWith({ DB: broken() }, rotate(bearer(token), { webhook_id: legacy }))],
        [
          '500 configuration',
          () => fetchWith({ WEBHOOK_SECRET_KEY: '' }, rotate(bearer(token), { webhook_id: legacy })),
        ],
        ['503', () => fetchWith({ DB: overloaded() }, rotate(bearer(token), { webhook_id: legacy }))],
      ],
      ['200', '404', '500', '503'],
    );
    // The reply is the new secret, and GET answers it from now on.
    const rotated = (values.get('200') as { secret: string }).secret;
    expect(rotated).toMatch(SECRET);
    expect(rotated).not.toBe(hook.secret);
    expect((values.get('200 string id, no secret before') as { secret: string }).secret).toMatch(SECRET);
    const read = await fetchWith(
      {},
      new Request(`${SECRET_URL}?webhook_id=${hook.webhook_id}`, { headers: bearer(token) }),
    );
    expect((await expectValue<{ secret: string }>(read)).value.secret).toBe(rotated);

    // A delivery made now is signed as webhooks.nftEvent says: two signatures, the new secret's first.
    const queue = fakeQueue();
    const published = await fetchAndWait(
      { DELIVERIES: queue.binding },
      eventRequest({ app_id: 'app-r', type: 'nft.minted', data: {} }, bearer(await platformToken())),
    );
    await expectValue(published, 202);
    const { requests } = receiver();
    await consume(DELIVERIES_QUEUE, queue.sent);
    const request = requests.find((r) => r.url === hook.url) as Received;
    const operation = resolve(doc.webhooks.nftEvent.post) as {
      parameters: { name: string; required?: boolean; schema: unknown }[];
    };
    for (const parameter of operation.parameters) {
      const header = request.headers[parameter.name.toLowerCase()];
      if (parameter.required) expect(header, parameter.name).toBeDefined();
      if (header !== undefined) expect(validate(parameter.schema, header).errors, parameter.name).toEqual([]);
    }
    const signatures = (request.headers['webhook-signature'] as string).split(' ');
    expect(signatures).toHaveLength(2);
    const one = (signature: string | undefined) => ({ ...request.headers, 'webhook-signature': signature as string });
    expect(() => new StandardWebhook(rotated).verify(request.body, one(signatures[0]))).not.toThrow();
    expect(() => new StandardWebhook(hook.secret).verify(request.body, one(signatures[1]))).not.toThrow();
    expect(() => new StandardWebhook(hook.secret).verify(request.body, one(signatures[0]))).toThrow();
  });

  it('documents every reply of the delivery log: pages, one delivery with its attempts, and failures', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const token = await tokenFor('app-l');
    const limited = { ...env, APP_RATE_LIMITER: { limit: async () => ({ success: false }) } };
    const register = async (url: string) =>
      (
        await expectValue<Webhook>(
          await fetchWith({}, postTo(PATH, bearer(token), JSON.stringify({ url: `https://hooks.example.com/${url}` }))),
          201,
        )
      ).value.webhook_id;
    const hook = await register('log');
    const gone = await register('log-gone');
    const publish = async (appId: string) => {
      const queue = fakeQueue();
      const res = await fetchAndWait(
        { DELIVERIES: queue.binding },
        eventRequest({ app_id: appId, type: 'nft.minted', data: {} }, bearer(await platformToken())),
      );
      await expectValue(res, 202);
      return queue.sent as { delivery_id: string }[];
    };
    const deliveryOf = async (webhookId: number | string, messages: { delivery_id: string }[]) =>
      (await env.DB.prepare(
        `SELECT CAST(delivery_id AS TEXT) AS id FROM deliveries
         WHERE webhook_id = ?1 AND delivery_id IN (SELECT CAST(value AS INTEGER) FROM json_each(?2))`,
      )
        .bind(String(webhookId), JSON.stringify(messages.map((m) => m.delivery_id)))
        .first<string>('id')) as string;

    // The first attempt to `log` gets no connection, the second 200; `log-gone` answers 410 with
    // 2,000 bytes, of which the log keeps 1,024.
    const sent = await publish('app-l');
    const [delivered, failed] = [await deliveryOf(hook, sent), await deliveryOf(gone, sent)];
    let calls = 0;
    receiver((req) => {
      if (req.url.endsWith('/log-gone')) return new Response('é'.repeat(1000), { status: 410 });
      if (++calls === 1) throw new TypeError('Network connection lost');
      return new Response('ok');
    });
    await consume(DELIVERIES_QUEUE, sent);
    await env.DB.prepare(`UPDATE deliveries SET next_attempt_at = ?2 WHERE delivery_id = ?1`)
      .bind(delivered, new Date().toISOString())
      .run();
    await consume(DELIVERIES_QUEUE, [{ delivery_id: delivered }]);
    // A newer one, not attempted yet (`log-gone` is disabled now: it gets none).
    const pending = await deliveryOf(hook, await publish('app-l'));
    const foreign = await insertWebhook('app-m');
    const theirs = await deliveryOf(foreign, await publish('app-m'));

    const log = (query: string, headers: Record<string, string>) =>
      new Request(`${ORIGIN}${DELIVERY_PATH}?${query}`, { headers });
    const first = await fetchWith({}, log(`webhook_id=${hook}&limit=1`, bearer(token)));
    const bookmark = first.headers.get('x-d1-bookmark') as string;
    const { next_cursor: cursor } = (await expectValue<{ next_cursor: string }>(first)).value;
    const values = await expectEachDocumented(
      'get',
      DELIVERY_PATH,
      [
        ['200 page', () => fetchWith({}, log(`webhook_id=${hook}&limit=1`, bearer(token)))],
        ['200 next page', () => fetchWith({}, log(`webhook_id=${hook}&limit=1&cursor=${cursor}`, bearer(token)))],
        ['200 failed', () => fetchWith({}, log(`webhook_id=${gone}&status=failed`, bearer(token)))],
        ['200 none', () => fetchWith({}, log(`webhook_id=${gone}&status=pending`, bearer(token)))],
        ['200 delivery', () => fetchWith({}, log(`delivery_id=${delivered}`, bearer(token)))],
        [
          '200 delivery, the rest ignored',
          () => fetchWith({}, log(`delivery_id=${failed}&webhook_id=abc&limit=0`, bearer(token))),
        ],
        ['200 not attempted', () => fetchWith({}, log(`delivery_id=${pending}`, bearer(token)))],
        [
          '200 bookmark',
          () => fetchWith({}, log(`webhook_id=${hook}`, { ...bearer(token), 'x-d1-bookmark': bookmark })),
        ],
        ['400', () => fetchWith({}, log(`webhook_id=${hook}&limit=0`, bearer(token)))],
        ['400 neither id', () => fetchWith({}, log('limit=5', bearer(token)))],
        ['400 status', () => fetchWith({}, log(`webhook_id=${hook}&status=done`, bearer(token)))],
        ['400 cursor', () => fetchWith({}, log(`webhook_id=${hook}&cursor=nope`, bearer(token)))],
        ['400 repeated', () => fetchWith({}, log(`delivery_id=${pending}&delivery_id=${pending}`, bearer(token)))],
        ['400 delivery_id', () => fetchWith({}, log('delivery_id=0', bearer(token)))],
        [
          '400 bookmark',
          () => fetchWith({}, log(`webhook_id=${hook}`, { ...bearer(token), 'x-d1-bookmark': 'first-primary' })),
        ],
        ['401', () => fetchWith({}, log(`webhook_id=${hook}`, {}))],
        ['401 invalid_token', () => fetchWith({}, log(`webhook_id=${hook}`, bearer('a.b.c')))],
        ['404', () => fetchWith({}, log(`webhook_id=${foreign}`, bearer(token)))],
        ['404 delivery', () => fetchWith({}, log(`delivery_id=${theirs}`, bearer(token)))],
        ['404 missing', () => fetchWith({}, log('delivery_id=9223372036854775807', bearer(token)))],
        ['429', () => fetchWith(limited, log(`webhook_id=${hook}`, bearer(token)))],
        ['500', () => fetchWith({ DB: broken() }, log(`webhook_id=${hook}`, bearer(token)))],
        ['503', () => fetchWith({ DB: overloaded() }, log(`delivery_id=${delivered}`, bearer(token)))],
      ],
      ['200', '404', '500', '503'],
    );

    type Delivery = { delivery_id: number; status: string; attempt_log?: Record<string, unknown>[] } & Record<
      string,
      unknown
    >;
    type Page = { deliveries: Delivery[]; next_cursor: string | null };
    // Newest first, one page after the other; the state of each, and its last attempt.
    const page = values.get('200 page') as Page;
    const next = values.get('200 next page') as Page;
    expect(page.deliveries.map((d) => d.delivery_id)).toEqual([Number(pending)]);
    expect(page.next_cursor).toBe(cursor);
    expect(next.deliveries.map((d) => d.delivery_id)).toEqual([Number(delivered)]);
    expect(next.next_cursor).toBeNull();
    expect((values.get('200 bookmark') as Page).deliveries.map((d) => d.delivery_id)).toEqual(
      [pending, delivered].map(Number),
    );
    expect(page.deliveries[0]).toMatchObject({ status: 'pending', attempts: 0, last_attempt_at: null });
    expect((values.get('200 none') as Page).deliveries).toEqual([]);
    const [gave] = (values.get('200 failed') as Page).deliveries;
    expect(gave).toMatchObject({ delivery_id: Number(failed), status: 'failed', last_status: 410, last_error: null });
    // One delivery: its attempts, oldest first, with what each got.
    const one = values.get('200 delivery') as Delivery;
    expect(one).toMatchObject({
      status: 'succeeded',
      attempts: 2,
      next_attempt_at: null,
      last_status: 200,
      last_error: null,
    });
    expect(one.attempt_log?.map(({ attempt, status, error, body }) => ({ attempt, status, error, body }))).toEqual([
      { attempt: 1, status: null, error: 'connection', body: null },
      { attempt: 2, status: 200, error: null, body: 'ok' },
    ]);
    const kept = (values.get('200 delivery, the rest ignored') as Delivery).attempt_log?.[0]?.body as string;
    expect(kept).toBe('é'.repeat(512));
    expect(new TextEncoder().encode(kept).byteLength).toBe(1024);
    expect((values.get('200 not attempted') as Delivery).attempt_log).toEqual([]);

    await expectOtherMethodsRefused(DELIVERY_PATH, `?webhook_id=${hook}`, ['POST', 'PUT', 'DELETE', 'HEAD'], token);
  });

  it('documents every reply of sending a test event; its delivery is the documented request', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const token = await tokenFor('app-x');
    const limited = { ...env, APP_RATE_LIMITER: { limit: async () => ({ success: false }) } };
    // Its event_types do not take a test event's type: a test event is delivered all the same.
    const created = await fetchWith(
      {},
      postTo(
        PATH,
        bearer(token),
        JSON.stringify({ url: 'https://hooks.example.com/test-event', event_types: ['nft.burned'] }),
      ),
    );
    const { value: hook } = await expectValue<Webhook & { secret: string }>(created, 201);
    const off = await insertWebhook('app-x', { enabled: false });
    const foreign = await insertWebhook('app-y');
    const queue = fakeQueue();
    const send = (overrides: Record<string, unknown>, headers: Record<string, string>, body: unknown, type?: string) =>
      fetchAndWait(
        { DELIVERIES: queue.binding, ...overrides },
        postTo(TEST_EVENT_PATH, headers, typeof body === 'string' ? body : JSON.stringify(body), type),
      );
    const id = hook.webhook_id;

    const values = await expectEachDocumented(
      'post',
      TEST_EVENT_PATH,
      [
        ['202', () => send({}, bearer(token), { webhook_id: id })],
        ['202 string id, another type', () => send({}, bearer(token), { webhook_id: String(id), type: 'nft.minted' })],
        ['400', () => send({}, bearer(token), { webhook_id: id, type: 'bad type' })],
        ['400 missing', () => send({}, bearer(token), { type: 'nft.minted' })],
        ['400 JSON', () => send({}, bearer(token), '{')],
        ['401', () => send({}, {}, { webhook_id: id })],
        ['401 invalid_token', () => send({}, bearer('a.b.c'), { webhook_id: id })],
        ['404', () => send({}, bearer(token), { webhook_id: foreign })],
        ['409', () => send({}, bearer(token), { webhook_id: off })],
        ['413', () => send({}, bearer(token), sizedBody(MAX_BODY_BYTES + 1, { webhook_id: id }))],
        ['415', () => send({}, bearer(token), { webhook_id: id }, 'text/plain')],
        ['429', () => send(limited, bearer(token), { webhook_id: id })],
        ['500', () => send({ DB: broken() }, bearer(token), { webhook_id: id })],
        ['503', () => send({ DB: overloaded() }, bearer(token), { webhook_id: id })],
      ],
      ['202', '404', '409', '500', '503'],
    );
    const accepted = ['202', '202 string id, another type'].map(
      (label) => values.get(label) as { event_id: string; delivery_id: number },
    );
    expect(accepted.map((v) => Object.keys(v))).toEqual([
      ['event_id', 'delivery_id'],
      ['event_id', 'delivery_id'],
    ]);
    // Only the accepted ones were queued, each its one delivery; the log shows them.
    expect(queue.sent).toEqual(accepted.map((v) => ({ delivery_id: String(v.delivery_id) })));
    for (const [v, type] of [
      [accepted[0], 'webhook.test'],
      [accepted[1], 'nft.minted'],
    ] as const) {
      const res = await fetchWith(
        {},
        new Request(`${ORIGIN}${DELIVERY_PATH}?delivery_id=${v?.delivery_id}`, { headers: bearer(token) }),
      );
      expect((await expectValue(res)).value).toMatchObject({ event_id: v?.event_id, type, status: 'pending' });
    }

    // Delivered as webhooks.nftEvent says: its headers, its body (data {}), signed with the webhook's secret.
    const { requests } = receiver(() => new Response(null, { status: 204 }));
    await consume(DELIVERIES_QUEUE, queue.sent);
    const operation = resolve(doc.webhooks.nftEvent.post) as {
      parameters: { name: string; required?: boolean; schema: unknown }[];
      requestBody: { content: Record<string, { schema: unknown }> };
    };
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual(accepted.map((v) => v?.event_id));
    for (const request of requests) {
      expect(request.url).toBe(hook.url);
      for (const parameter of operation.parameters) {
        const header = request.headers[parameter.name.toLowerCase()];
        if (parameter.required) expect(header, parameter.name).toBeDefined();
        if (header !== undefined) expect(validate(parameter.schema, header).errors, parameter.name).toEqual([]);
      }
      const payload = JSON.parse(request.body);
      expect(validate(operation.requestBody.content['application/json']?.schema, payload).errors).toEqual([]);
      expect(payload.data).toEqual({});
      expect(() => new StandardWebhook(hook.secret).verify(request.body, request.headers)).not.toThrow();
    }
    expect(requests.map((r) => JSON.parse(r.body).type)).toEqual(['webhook.test', 'nft.minted']);

    await expectOtherMethodsRefused(TEST_EVENT_PATH, '', ['GET', 'PUT', 'DELETE', 'HEAD'], token);
  });

  it('documents every reply of recovering deliveries; a recovered delivery is attempted again', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const token = await tokenFor('app-v');
    const limited = { ...env, APP_RATE_LIMITER: { limit: async () => ({ success: false }) } };
    const register = async (url: string) =>
      (
        await expectValue<Webhook>(
          await fetchWith({}, postTo(PATH, bearer(token), JSON.stringify({ url: `https://hooks.example.com/${url}` }))),
          201,
        )
      ).value.webhook_id;
    const hook = await register('recover');
    const gone = await register('recover-gone');
    const off = await insertWebhook('app-v', { enabled: false });
    const foreign = await insertWebhook('app-w');

    // `recover-gone` answers 410 until it is fixed: its delivery fails, and the service disables it.
    const published = fakeQueue();
    await expectValue(
      await fetchAndWait(
        { DELIVERIES: published.binding },
        eventRequest({ app_id: 'app-v', type: 'nft.minted', data: {} }, bearer(await platformToken())),
      ),
      202,
    );
    let fixed = false;
    receiver((req) => new Response(null, { status: req.url.endsWith('/recover-gone') && !fixed ? 410 : 204 }));
    await consume(DELIVERIES_QUEUE, published.sent);
    const failed = (await env.DB.prepare(
      `SELECT CAST(delivery_id AS TEXT) AS id FROM deliveries WHERE webhook_id = ?1 AND status = 'failed'`,
    )
      .bind(String(gone))
      .first<string>('id')) as string;
    expect(failed).not.toBeNull();

    const queue = fakeQueue();
    const send = (overrides: Record<string, unknown>, headers: Record<string, string>, body: unknown, type?: string) =>
      fetchAndWait(
        { DELIVERIES: queue.binding, ...overrides },
        postTo(RECOVER_PATH, headers, typeof body === 'string' ? body : JSON.stringify(body), type),
      );
    const at = (msFromNow: number) => new Date(Date.now() + msFromNow).toISOString();
    const hour = 3_600_000;
    const failures: [string, () => Promise<Response>][] = [
      ['400', () => send({}, bearer(token), { webhook_id: gone, since: 'yesterday' })],
      ['400 no zone', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour).slice(0, 19) })],
      ['400 missing since', () => send({}, bearer(token), { webhook_id: gone })],
      ['400 future', () => send({}, bearer(token), { webhook_id: gone, since: at(hour) })],
      ['400 too old', () => send({}, bearer(token), { webhook_id: gone, since: at(-31 * 24 * hour) })],
      ['400 until', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour), until: at(-2 * hour) })],
      ['400 JSON', () => send({}, bearer(token), '{"webhook_id":')],
      ['401', () => send({}, {}, { webhook_id: gone, since: at(-hour) })],
      ['401 invalid_token', () => send({}, bearer('a.b.c'), { webhook_id: gone, since: at(-hour) })],
      ['404', () => send({}, bearer(token), { webhook_id: foreign, since: at(-hour) })],
      ['409', () => send({}, bearer(token), { webhook_id: off, since: at(-hour) })],
      ['409 disabled by its 410', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour) })],
      ['413', () => send({}, bearer(token), sizedBody(MAX_BODY_BYTES + 1, { webhook_id: gone, since: at(-hour) }))],
      ['415', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour) }, 'text/plain')],
      ['429', () => send(limited, bearer(token), { webhook_id: gone, since: at(-hour) })],
      ['500', () => send({ DB: broken() }, bearer(token), { webhook_id: hook, since: at(-hour) })],
      [
        '500 configuration',
        () => send({ DELIVERY_RETENTION_DAYS: 'a month' }, bearer(token), { webhook_id: hook, since: at(-hour) }),
      ],
      ['503', () => send({ DB: overloaded() }, bearer(token), { webhook_id: hook, since: at(-hour) })],
    ];
    const bookmarked = ['202', '404', '409', '500', '503'];
    await expectEachDocumented('post', RECOVER_PATH, failures, bookmarked);
    expect(queue.sent).toEqual([]);

    // Enabled again, the webhook has its failed delivery recovered.
    await expectDocumented(
      await fetchWith({}, putRequest(bearer(token), JSON.stringify({ webhook_id: gone, is_enabled: true }))),
      'put',
    );
    const values = await expectEachDocumented(
      'post',
      RECOVER_PATH,
      [
        ['202', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour) })],
        [
          '202 none, string id and a window',
          () => send({}, bearer(token), { webhook_id: String(hook), since: at(-hour), until: at(hour) }),
        ],
      ],
      bookmarked,
    );
    expect(values.get('202')).toEqual({ deliveries: 1 });
    expect(values.get('202 none, string id and a window')).toEqual({ deliveries: 0 });
    expect(queue.sent).toEqual([{ delivery_id: failed, gen: 1 }]);
    const state = () =>
      env.DB.prepare('SELECT status, attempts, schedule_start FROM deliveries WHERE delivery_id = ?1')
        .bind(failed)
        .first();
    expect(await state()).toEqual({ status: 'pending', attempts: 1, schedule_start: 1 });
    fixed = true;
    await consume(DELIVERIES_QUEUE, queue.sent);
    expect(await state()).toEqual({ status: 'succeeded', attempts: 2, schedule_start: 1 });

    await expectOtherMethodsRefused(RECOVER_PATH, '', ['GET', 'PUT', 'DELETE', 'HEAD'], token);
  });

  /**
   * Sends each body to the operation: the schema of its documented request body must accept exactly
   * the bodies the Worker does not refuse (400).
   */
  async function expectSchemaAgrees(method: 'PUT' | 'POST', path: string, token: string, bodies: string[]) {
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

  it('its request body schema accepts and refuses what the Worker does', async () => {
    await expectSchemaAgrees('PUT', PATH, await tokenFor('app-a'), [
      '{"webhook_id": 7}',
      '{"webhook_id": "7", "is_enabled": true}',
      '{"webhook_id": 7, "is_enabled": false, "extra": [1]}',
      '{"webhook_id": 7.5}',
      '{"webhook_id": "7.5"}',
      '{"webhook_id": "+7"}',
      '{"webhook_id": "007"}',
      `{"webhook_id": "${'0'.repeat(63)}7"}`,
      `{"webhook_id": "${'0'.repeat(64)}7"}`,
      '{"webhook_id": "0"}',
      '{"webhook_id": "000"}',
      '{"webhook_id": "9223372036854775807"}',
      '{"webhook_id": "99999999999999999999"}',
      '{"webhook_id": true}',
      '{"webhook_id": null}',
      '{"webhook_id": {}}',
      '{"webhook_id": 0}',
      '{"webhook_id": -7}',
      '{"webhook_id": 7, "is_enabled": "true"}',
      '{"webhook_id": 7, "is_enabled": 1}',
      '{"is_enabled": true}',
      '[7]',
    ]);
  });

  it('its registration schema accepts and refuses the body shapes the Worker does', async () => {
    const types = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => `type.${i}`));
    await expectSchemaAgrees('POST', PATH, await tokenFor('app-schema'), [
      '{"url": "https://hooks.example.com/s1"}',
      '{"url": "https://hooks.example.com/s2", "is_enabled": false}',
      '{"url": "https://hooks.example.com/s3", "extra": [1]}',
      '{"url": 5}',
      '{"url": null}',
      '{"url": "https://hooks.example.com/s4", "is_enabled": "true"}',
      '{"url": "https://hooks.example.com/s5", "is_enabled": 1}',
      `{"url": "https://hooks.example.com/${'a'.repeat(2048)}"}`,
      '{"is_enabled": true}',
      '["https://hooks.example.com/"]',
      '{"url": "https://hooks.example.com/t1", "event_types": null}',
      '{"url": "https://hooks.example.com/t2", "event_types": ["nft.minted"]}',
      `{"url": "https://hooks.example.com/t3", "event_types": ${types(50)}}`,
      `{"url": "https://hooks.example.com/t4", "event_types": ["${'A_z.9'.repeat(12)}abcd"]}`,
      `{"url": "https://hooks.example.com/t5", "event_types": ${types(51)}}`,
      '{"url": "https://hooks.example.com/t6", "event_types": []}',
      '{"url": "https://hooks.example.com/t7", "event_types": ["nft.minted", "nft.minted"]}',
      '{"url": "https://hooks.example.com/t8", "event_types": ["nft minted"]}',
      '{"url": "https://hooks.example.com/t9", "event_types": ["nft-minted"]}',
      '{"url": "https://hooks.example.com/t10", "event_types": [""]}',
      `{"url": "https://hooks.example.com/t11", "event_types": ["${'a'.repeat(65)}"]}`,
      '{"url": "https://hooks.example.com/t12", "event_types": "nft.minted"}',
      '{"url": "https://hooks.example.com/t13", "event_types": [1]}',
      '{"url": "https://hooks.example.com/t14", "event_types": [null]}',
      '{"url": "https://hooks.example.com/t15", "event_types": {}}',
      '{"url": "https://hooks.example.com/t16", "event_types": ["nft.minted\\n"]}',
    ]);
  });

  it("its event schema accepts and refuses the bodies the Worker's publishing does", async () => {
    const publisher = await tokenFor('platform-svc', { scope: 'events:publish' });
    const event = (fields: Record<string, unknown>, without?: string) => {
      const body: Record<string, unknown> = { app_id: 'app-events', type: 'nft.minted', data: {}, ...fields };
      if (without !== undefined) delete body[without];
      return JSON.stringify(body);
    };
    await expectSchemaAgrees('POST', EVENT_PATH, publisher, [
      event({}),
      event({ id: 'evt-1_A', data: { nested: { list: [1, 2.5, null, 'x'] } }, extra: [1] }),
      event({ app_id: 'a'.repeat(255), type: `${'A_z.9'.repeat(12)}abcd`, id: 'a'.repeat(64) }),
      event({ app_id: 'ä👍' }),
      // Characters, not UTF-16 units: 255 emoji are 510 units.
      event({ app_id: '👍'.repeat(255) }),
      event({ app_id: '👍'.repeat(256) }),
      event({}, 'app_id'),
      event({ app_id: '' }),
      event({ app_id: 'a'.repeat(256) }),
      event({ app_id: 5 }),
      event({ app_id: null }),
      event({}, 'type'),
      event({ type: '' }),
      event({ type: 'a'.repeat(65) }),
      event({ type: 'nft-minted' }),
      event({ type: 'nft.minted\n' }),
      event({ type: ['nft.minted'] }),
      event({}, 'data'),
      event({ data: [] }),
      event({ data: null }),
      event({ data: 'x' }),
      event({ data: 5 }),
      event({ id: '' }),
      event({ id: 'a'.repeat(65) }),
      event({ id: 'a.b' }),
      event({ id: 5 }),
      event({ id: null }),
      '[]',
      '"event"',
      'null',
    ]);
  });

  it("its rotation schema accepts and refuses the bodies the Worker's rotation does", async () => {
    const id = await insertWebhook('app-rotate-schema');
    await expectSchemaAgrees('POST', SECRET_PATH, await tokenFor('app-rotate-schema'), [
      `{"webhook_id": ${id}}`,
      `{"webhook_id": "${id}"}`,
      `{"webhook_id": "00${id}", "extra": [1]}`,
      '{"webhook_id": 7}',
      '{"webhook_id": 7.5}',
      '{"webhook_id": "7.5"}',
      '{"webhook_id": "x"}',
      '{"webhook_id": true}',
      '{"webhook_id": null}',
      '{"webhook_id": 0}',
      '{"webhook_id": "0"}',
      '{"webhook_id": -7}',
      '{}',
      '[7]',
      '"7"',
      'null',
    ]);
  });

  it("its test event schema accepts and refuses the bodies the Worker's test events do", async () => {
    const id = await insertWebhook('app-test-schema');
    const off = await insertWebhook('app-test-schema', { enabled: false, url: 'https://hooks.example.com/off' });
    await expectSchemaAgrees('POST', TEST_EVENT_PATH, await tokenFor('app-test-schema'), [
      `{"webhook_id": ${id}}`,
      `{"webhook_id": "${id}", "type": "nft.minted"}`,
      `{"webhook_id": ${id}, "type": "${'A_z.9'.repeat(12)}abcd", "extra": [1]}`,
      `{"webhook_id": ${off}}`,
      '{"webhook_id": 7}',
      `{"webhook_id": ${id}, "type": null}`,
      `{"webhook_id": ${id}, "type": ""}`,
      `{"webhook_id": ${id}, "type": "${'a'.repeat(65)}"}`,
      `{"webhook_id": ${id}, "type": "nft minted"}`,
      `{"webhook_id": ${id}, "type": "nft-minted"}`,
      `{"webhook_id": ${id}, "type": "nft.minted\\n"}`,
      `{"webhook_id": ${id}, "type": 5}`,
      `{"webhook_id": ${id}, "type": ["nft.minted"]}`,
      '{"webhook_id": 7.5}',
      '{"webhook_id": "0"}',
      '{"webhook_id": null}',
      '{"type": "nft.minted"}',
      '[7]',
      'null',
    ]);
  });

  it("its recovery schema accepts and refuses the bodies the Worker's recovery does", async () => {
    const id = await insertWebhook('app-recover-schema');
    const off = await insertWebhook('app-recover-schema', { enabled: false, url: 'https://hooks.example.com/off' });
    const hour = 3_600_000;
    const base = Date.now() - 2 * hour;
    const iso = new Date(base).toISOString();
    /** The instant `base` at an offset of `minutes` (+ or -), written with or without its colon. */
    const offset = (minutes: number, colon = true) => {
      const sign = minutes < 0 ? '-' : '+';
      const hh = String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0');
      const mm = String(Math.abs(minutes) % 60).padStart(2, '0');
      return `${new Date(base + minutes * 60_000).toISOString().slice(0, 19)}${sign}${hh}${colon ? ':' : ''}${mm}`;
    };
    const date = iso.slice(0, 10);
    const yesterday = new Date(Date.now() - 24 * hour).toISOString().slice(0, 10);
    const body = (fields: Record<string, unknown>) => JSON.stringify({ webhook_id: id, ...fields });
    await expectSchemaAgrees('POST', RECOVER_PATH, await tokenFor('app-recover-schema'), [
      body({ since: iso }),
      body({ webhook_id: String(id), since: iso, until: new Date().toISOString(), extra: [1] }),
      body({ since: iso, until: new Date(Date.now() + 24 * hour).toISOString() }),
      body({ since: iso.replace('T', 't').replace('Z', 'z') }),
      body({ since: `${iso.slice(0, 16)}Z` }),
      body({ since: iso.replace('Z', '123456Z') }),
      body({ since: offset(60) }),
      body({ since: offset(60, false) }),
      body({ since: offset(-330) }),
      body({ since: offset(23 * 60 + 59) }),
      body({ webhook_id: off, since: iso }),
      body({ since: `${yesterday}T24:00Z` }),
      body({ since: `${yesterday}T24:00:00.000Z` }),
      body({ webhook_id: 7, since: iso }),
      body({}),
      body({ since: null }),
      body({ since: 5 }),
      body({ since: 'yesterday' }),
      body({ since: date }),
      body({ since: iso.slice(0, 19) }),
      body({ since: iso.replace('T', ' ') }),
      body({ since: iso.replace('Z', '1234567Z') }),
      body({ since: iso.replace(/\.\d+Z$/, '.Z') }),
      body({ since: `${date}T25:00Z` }),
      body({ since: `${date}T10:60Z` }),
      body({ since: `${date}T10:00:60Z` }),
      body({ since: `${yesterday}T24:00:01Z` }),
      body({ since: `${yesterday}T24:00:00.5Z` }),
      body({ since: `${date.slice(0, 4)}-13-01T00:00Z` }),
      body({ since: `${date.slice(0, 8)}32T00:00Z` }),
      body({ since: `${date.slice(0, 8)}00T00:00Z` }),
      body({ since: `${iso.slice(0, 19)}+24:00` }),
      body({ since: `${iso.slice(0, 19)}+01:60` }),
      body({ since: iso, until: null }),
      body({ since: iso, until: 5 }),
      body({ since: iso, until: 'now' }),
      body({ webhook_id: '0', since: iso }),
      body({ webhook_id: null, since: iso }),
      JSON.stringify({ since: iso }),
      '[]',
      'null',
    ]);
  });

  it('names every code with the message the Worker sends', async () => {
    const schemas = doc.components.schemas as Record<
      string,
      { properties?: { return?: { const: number }; message?: { const: string } } }
    >;
    const documented = Object.values(schemas)
      .filter((s) => s.properties?.return !== undefined)
      .map((s) => ({ return: s.properties?.return?.const, message: s.properties?.message?.const }));
    const sent = await Promise.all(
      Object.values(Code)
        .filter((code) => code !== Code.internal)
        .map(async (code) => envelope(200, code, 'x').json()),
    );
    expect(documented).toEqual(expect.arrayContaining(sent));
    expect(sent).toEqual(expect.arrayContaining(documented));
  });

  it("documents every method of each path, and gives each operation's failures its code", () => {
    expect(Object.keys(paths)).toEqual([
      PATH,
      SECRET_PATH,
      DELIVERY_PATH,
      TEST_EVENT_PATH,
      RECOVER_PATH,
      EVENT_PATH,
      STATS_PATH,
      RESEND_PATH,
      EVENT_TYPES_PATH,
    ]);
    for (const [path, methods] of Object.entries(paths)) {
      expect(documentedMethods(path), path).toBe(allowedMethods(path));
      for (const [method, operation] of Object.entries(methods) as [Method, { responses: Node }][]) {
        for (const [status, response] of Object.entries(operation.responses)) {
          const { schema } = ((resolve(response) as Node).content as Node)['application/json'] as {
            schema: { properties?: { return?: { const?: number } }; oneOf?: unknown[] };
          };
          const expected =
            Number(status) < 400 ? 0 : status === '401' ? Code.invalidToken : operationCode(method.toUpperCase(), path);
          const codes = (schema.oneOf ?? [schema]).map((s) => (s as typeof schema).properties?.return?.const);
          expect(codes, `${method.toUpperCase()} ${path} ${status}`).toEqual(codes.map(() => expected));
        }
      }
    }
  });

  it('shows event_types on every webhook, and its signing secret only in the registration', async () => {
    const token = await tokenFor('app-fields');
    const register = (body: Record<string, unknown>, key?: string) =>
      fetchWith(
        {},
        new Request(URL_, {
          method: 'POST',
          headers: {
            ...bearer(token),
            'content-type': 'application/json',
            ...(key === undefined ? {} : { 'idempotency-key': key }),
          },
          body: JSON.stringify(body),
        }),
      );
    const typed = { url: 'https://hooks.example.com/fields-1', event_types: ['nft.minted', 'nft.burned'] };
    const webhookFields = Object.keys(doc.components.schemas.Webhook.properties);
    expect(webhookFields).toEqual([
      'webhook_id',
      'url',
      'is_enabled',
      'event_types',
      'description',
      'rate_limit',
      'created_at',
      'updated_at',
    ]);

    const first = await register(typed, 'fields');
    const { value: created } = await expectValue<Webhook & { secret: string }>(first.clone(), 201);
    await expectDocumented(first, 'post');
    // The fields in the documented order, the secret last.
    expect(Object.keys(created)).toEqual([...webhookFields, 'secret']);
    expect(created.event_types).toEqual(typed.event_types);
    expect(created.secret).toMatch(SECRET);
    expect(atob(created.secret.slice('whsec_'.length))).toHaveLength(32);

    const replay = await register(typed, 'fields');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await expectValue(replay.clone(), 201)).value).toEqual(created);
    await expectDocumented(replay, 'post');

    // Absent or null: every type. Each registration has a secret of its own.
    const untyped = await register({ url: 'https://hooks.example.com/fields-2' });
    const nulled = await register({ url: 'https://hooks.example.com/fields-3', event_types: null });
    const every = [(await expectValue<Webhook & { secret: string }>(untyped.clone(), 201)).value];
    every.push((await expectValue<Webhook & { secret: string }>(nulled.clone(), 201)).value);
    await expectDocumented(untyped, 'post');
    await expectDocumented(nulled, 'post');
    expect(every.map((w) => w.event_types)).toEqual([null, null]);
    expect(new Set([created.secret, ...every.map((w) => w.secret)]).size).toBe(3);

    // GET shows the webhook with event_types and without its secret, alone or in a list.
    const { secret, ...shown } = created;
    const one = await fetchWith(
      {},
      new Request(`${URL_}?webhook_id=${created.webhook_id}`, { headers: bearer(token) }),
    );
    const read = await expectValue<Webhook>(one.clone());
    expect(read.value).toEqual(shown);
    expect(Object.keys(read.value)).toEqual(webhookFields);
    expect(read.text).not.toContain(secret);
    await expectDocumented(one, 'get');
    const list = await fetchWith({}, new Request(URL_, { headers: bearer(token) }));
    const page = await expectValue<{ webhooks: Webhook[] }>(list.clone());
    expect(page.value.webhooks.map((w) => [w.url, w.event_types])).toEqual([
      [typed.url, typed.event_types],
      ['https://hooks.example.com/fields-2', null],
      ['https://hooks.example.com/fields-3', null],
    ]);
    expect(page.value.webhooks.every((w) => Object.keys(w).join() === webhookFields.join())).toBe(true);
    expect(page.text).not.toContain('whsec_');
    await expectDocumented(list, 'get');
  });

  it('describes the deliveries the Worker sends (webhooks.nftEvent): request, signature and the replies it heeds', async () => {
    const token = await tokenFor('app-deliver');
    const publisher = await tokenFor('platform-svc', { scope: 'events:publish' });
    const register = async (name: string, eventTypes: string[] | null) => {
      const res = await fetchWith(
        {},
        new Request(URL_, {
          method: 'POST',
          headers: { ...bearer(token), 'content-type': 'application/json' },
          body: JSON.stringify({ url: `https://hooks.example.com/${name}`, event_types: eventTypes }),
        }),
      );
      return (await expectValue<Webhook & { secret: string }>(res, 201)).value;
    };
    // Each answers as its name says; `other` does not take the event's type.
    const hooks = {
      ok: await register('ok', null),
      gone: await register('gone', ['nft.minted']),
      busy: await register('busy', ['nft.burned', 'nft.minted']),
      other: await register('other', ['nft.burned']),
    };
    const replies: Record<string, () => Response> = {
      '/ok': () => new Response(null, { status: 204 }),
      '/gone': () => new Response('gone', { status: 410 }),
      '/busy': () => new Response('later', { status: 503, headers: { 'retry-after': '3600' } }),
    };

    // `data` as the publisher wrote it: an integer no double holds.
    const body =
      '{"app_id":"app-deliver","type":"nft.minted","id":"deliver-1","data":{"token_id":123456789012345678901234567890}}';
    const publish = await fetchWith(
      {},
      new Request(EVENT_URL, {
        method: 'POST',
        headers: { ...bearer(publisher), 'content-type': 'application/json' },
        body,
      }),
    );
    const { value } = await expectValue<{ event_id: string }>(publish, 202);
    const { results: deliveries } = await env.DB.prepare(
      `SELECT CAST(delivery_id AS TEXT) AS id, CAST(webhook_id AS TEXT) AS webhook FROM deliveries
       WHERE event_id = ?1 ORDER BY delivery_id`,
    )
      .bind(value.event_id)
      .all<{ id: string; webhook: string }>();
    expect(deliveries.map((d) => d.webhook)).toEqual(
      [hooks.ok, hooks.gone, hooks.busy].map((h) => String(h.webhook_id)),
    );

    const sent: { url: URL; headers: Headers; method: string; body: string }[] = [];
    const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      sent.push({ url, headers: request.headers, method: request.method, body: await request.text() });
      return (replies[url.pathname] as () => Response)();
    }) as typeof fetch;
    const batch = createMessageBatch(
      'nft-webhook-deliveries',
      deliveries.map((d) => ({
        id: `msg-${d.webhook}`,
        timestamp: new Date(),
        attempts: 1,
        body: { delivery_id: d.id },
      })),
    );
    // The pool's batch records which messages were retried, not their delays: spies see those.
    const retries = batch.messages.map((message) => vi.spyOn(message, 'retry'));
    const ctx = createExecutionContext();
    await consumeDeliveries(batch, env, fetcher);
    const result = await getQueueResult(batch, ctx);

    // Every request is the documented one: its headers, its body, its signature by the webhook's secret.
    const operation = resolve(doc.webhooks.nftEvent.post) as {
      parameters: { name: string; in: string; required?: boolean; schema: unknown }[];
      requestBody: { content: Record<string, { schema: unknown }> };
      responses: Node;
    };
    const payloadSchema = operation.requestBody.content['application/json']?.schema;
    expect(sent.map((r) => r.url.pathname).sort()).toEqual(['/busy', '/gone', '/ok']);
    for (const request of sent) {
      const hook = Object.values(hooks).find((h) => new URL(h.url).pathname === request.url.pathname) as Webhook & {
        secret: string;
      };
      expect(request.method).toBe('POST');
      expect(request.headers.get('content-type')).toBe('application/json');
      for (const parameter of operation.parameters) {
        expect(parameter.in).toBe('header');
        const header = request.headers.get(parameter.name);
        if (parameter.required) expect(header, parameter.name).not.toBeNull();
        if (header !== null)
          expect(validate(parameter.schema, header).errors, `${parameter.name}: ${header}`).toEqual([]);
      }
      expect(request.headers.get('webhook-id')).toBe(value.event_id);
      expect(Math.abs(Number(request.headers.get('webhook-timestamp')) - Date.now() / 1000)).toBeLessThan(60);
      const payload = JSON.parse(request.body);
      expect(validate(payloadSchema, payload).errors).toEqual([]);
      expect(payload.type).toBe('nft.minted');
      expect(request.body).toContain('{"token_id":123456789012345678901234567890}');
      const headers = Object.fromEntries(request.headers);
      expect(() => new StandardWebhook(hook.secret).verify(request.body, headers)).not.toThrow();
      const others = Object.values(hooks).filter((h) => h !== hook);
      for (const other of others)
        expect(() => new StandardWebhook(other.secret).verify(request.body, headers)).toThrow();
    }

    // What the replies do, as documented: 2XX delivered, 410 disables, 503 with Retry-After waits that long.
    expect(Object.keys(operation.responses)).toEqual(
      expect.arrayContaining(['2XX', '410', '429', '502', '503', '504']),
    );
    expect(result.explicitAcks.sort()).toEqual([`msg-${hooks.gone.webhook_id}`, `msg-${hooks.ok.webhook_id}`].sort());
    expect(result.retryMessages).toEqual([{ msgId: `msg-${hooks.busy.webhook_id}` }]);
    expect(retries.map((spy) => spy.mock.calls)).toEqual([[], [], [[{ delaySeconds: 3600 }]]]);
    const enabled: Record<string, boolean> = {};
    for (const [name, hook] of Object.entries(hooks)) {
      const res = await fetchWith({}, new Request(`${URL_}?webhook_id=${hook.webhook_id}`, { headers: bearer(token) }));
      enabled[name] = (await expectValue<Webhook>(res)).value.is_enabled;
    }
    expect(enabled).toEqual({ ok: true, gone: false, busy: true, other: true });
  });
});
