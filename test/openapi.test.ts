import { env, SELF } from 'cloudflare:test';
import { Validator } from '@cfworker/json-schema';
import { afterEach, describe, expect, it, vi } from 'vitest';
import doc from '../docs/openapi.json';
import { Code, envelope } from '../src/http/envelope';
import { bearer, faultyDb, fetchWith, insertWebhook, ORIGIN, PATH, tokenFor, URL_ } from './helpers';

/** The body limit the docs promise (8 KiB). */
const MAX_BODY_BYTES = 8192;

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

/** Asserts that `res` is a documented reply of `operation` (or of the path-level 404/405). */
async function expectDocumented(
  res: Response,
  operation: 'get' | 'post' | 'put' | 'delete' | 'unknown-path' | 'other-method',
) {
  const body = await res.json();
  let response: Node;
  if (operation === 'unknown-path' || operation === 'other-method') {
    const schema = resolve({
      $ref: `#/components/schemas/${operation === 'unknown-path' ? 'NotFound' : 'MethodNotAllowed'}`,
    });
    expect(validate(schema, body).errors).toEqual([]);
    return;
  }
  const responses = (doc.paths[PATH] as Node)[operation] as { responses: Node };
  response = resolve(responses.responses[String(res.status)]) as Node;
  expect(response, `${operation.toUpperCase()} ${res.status} is documented`).toBeDefined();
  const schema = (response.content as Node)['application/json'] as { schema: unknown };
  expect(validate(schema.schema, body).errors).toEqual([]);
  for (const [name, header] of Object.entries(
    response.headers as Record<string, { required?: boolean; schema: unknown }>,
  )) {
    const value = res.headers.get(name);
    if (header.required) expect(value, `${name} on ${res.status}`).not.toBeNull();
    if (value !== null) expect(validate(header.schema, value).errors, `${name}: ${value}`).toEqual([]);
  }
}

const putRequest = (headers: Record<string, string>, body: string) =>
  new Request(URL_, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body });
const deleteRequest = (query: string, headers: Record<string, string>) =>
  new Request(`${URL_}?${query}`, { method: 'DELETE', headers });

/** A D1 binding whose every call fails with `message`. */
const failingDb = (message: string) => faultyDb(Array.from({ length: 10 }, () => ({ before: message }))).db;

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
    await expectDocumented(await SELF.fetch(URL_, { method: 'PATCH' }), 'other-method');
  });

  /** Sends each body to the Worker: the schema must accept exactly those it does not refuse (400). */
  async function expectSchemaAgrees(schemaName: string, method: 'PUT' | 'POST', app: string, bodies: string[]) {
    const token = await tokenFor(app);
    const schema = resolve({ $ref: `#/components/schemas/${schemaName}` });
    for (const body of bodies) {
      const res = await fetchWith(
        {},
        new Request(URL_, { method, headers: { ...bearer(token), 'content-type': 'application/json' }, body }),
      );
      await res.text();
      expect(validate(schema, JSON.parse(body)).valid, body).toBe(res.status !== 400);
    }
  }

  it('its request body schema accepts and refuses what the Worker does', async () => {
    await expectSchemaAgrees('WebhookUpdate', 'PUT', 'app-a', [
      '{"webhook_id": 7}',
      '{"webhook_id": "7", "is_enabled": true}',
      '{"webhook_id": 7, "is_enabled": false, "extra": [1]}',
      '{"webhook_id": 7.5}',
      '{"webhook_id": "7.5"}',
      '{"webhook_id": "+7"}',
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
    await expectSchemaAgrees('WebhookRegistration', 'POST', 'app-schema', [
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
});
