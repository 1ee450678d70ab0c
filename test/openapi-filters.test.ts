// The filter operations (a webhook's value set, trying a filter) and the `filter` of a webhook,
// checked against docs/openapi.json with real replies, status by status.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FILTER_TEST_PATH, VALUES_PATH } from '../src/filters/routes';
import { applicationSql } from './helpers/objects';
import {
  broken,
  doc,
  expectDocumented,
  expectSchemaAgrees,
  limited,
  type Method,
  overloaded,
  paths,
  requestTo,
  resolve,
  validate,
} from './helpers/openapi';
import { fetchAndWait, fetchWith, ORIGIN, PATH, registerWebhook } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Sends each case, asserts its status (the label's first three characters) and that it is documented. */
async function expectEach(method: Method, path: string, cases: [string, () => Promise<Response>][]) {
  const seen: string[] = [];
  for (const [expected, send] of cases) {
    const res = await send();
    expect(String(res.status), `${method} ${path} ${expected}`).toBe(expected.slice(0, 3));
    await expectDocumented(res, method, path);
    seen.push(expected.slice(0, 3));
  }
  expect([...new Set(seen)].sort()).toEqual(Object.keys(paths[path]?.[method]?.responses ?? {}).sort());
}

/** The application's object fails. */
const objectDown = {
  APPLICATIONS: {
    getByName: () => ({
      changeValues: async () => {
        throw new Error('object unavailable');
      },
      values: async () => {
        throw new Error('object unavailable');
      },
      tryFilter: async () => {
        throw new Error('object unavailable');
      },
    }),
  },
};

describe('docs/openapi.json: the filter operations', () => {
  it('documents every reply of POST .../values', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = 'oa-values-post';
    const token = bearer(await tokenFor(app));
    const { id } = await registerWebhook(app);
    const full = await registerWebhook(app, { url: 'https://full.example.com/h' });
    await fetchAndWait({}, requestTo('POST', VALUES_PATH, token, { webhook_id: full.id, add: ['a'] }));
    const post = (headers: Record<string, string>, body: unknown, type?: string) =>
      requestTo('POST', VALUES_PATH, headers, body, type);
    // A set that is full: 100,000 values counted.
    await applicationSql(app, 'UPDATE value_counts SET count = 100000 WHERE webhook_id = ?1', full.id);
    await expectEach('post', VALUES_PATH, [
      [
        '200',
        () => fetchWith({}, post(token, { webhook_id: id, add: ['0xAB00000000000000000000000000000000000000'] })),
      ],
      ['200 no change', () => fetchWith({}, post(token, { webhook_id: id }))],
      ['400', () => fetchWith({}, post(token, { webhook_id: id, add: [''] }))],
      ['401', () => fetchWith({}, post({}, {}))],
      ['403', async () => fetchWith({}, post(bearer(await tokenFor(app, { scope: 'webhooks:read' })), {}))],
      ['404', () => fetchWith({}, post(token, { webhook_id: '77777777', add: ['x'] }))],
      ['409', () => fetchWith({}, post(token, { webhook_id: full.id, add: ['b'] }))],
      ['413', () => fetchWith({}, post(token, { webhook_id: id, pad: 'x'.repeat(1_100_000) }))],
      ['415', () => fetchWith({}, post(token, { webhook_id: id }, 'text/plain'))],
      ['429', () => fetchWith(limited, post(token, { webhook_id: id }))],
      ['500', () => fetchWith({ DB: broken() }, post(token, { webhook_id: id, add: ['y'] }))],
      ['503', () => fetchWith({ DB: overloaded() }, post(token, { webhook_id: id, add: ['y'] }))],
      ['503 object', () => fetchWith(objectDown, post(token, { webhook_id: id, add: ['y'] }))],
    ]);
    await expectSchemaAgrees('POST', VALUES_PATH, await tokenFor(app), [
      `{"webhook_id":${id}}`,
      `{"webhook_id":"${id}","add":["a"],"remove":["b"]}`,
      `{"webhook_id":${id},"add":[""]}`,
      `{"webhook_id":${id},"add":"a"}`,
      `{"webhook_id":${id},"remove":[1]}`,
      `{"webhook_id":${id},"remove":["${'x'.repeat(257)}"]}`,
      `{"add":["a"]}`,
    ]);
  });

  it('documents every reply of GET .../values', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = 'oa-values-get';
    const token = bearer(await tokenFor(app));
    const { id } = await registerWebhook(app);
    await fetchAndWait({}, requestTo('POST', VALUES_PATH, token, { webhook_id: id, add: ['a', 'b', 'c'] }));
    const get = (query: string, headers: Record<string, string>) =>
      new Request(`${ORIGIN}${VALUES_PATH}?${query}`, { headers });
    await expectEach('get', VALUES_PATH, [
      ['200', () => fetchWith({}, get(`webhook_id=${id}&limit=2`, token))],
      ['400', () => fetchWith({}, get('webhook_id=x', token))],
      ['401', () => fetchWith({}, get(`webhook_id=${id}`, {}))],
      ['404', () => fetchWith({}, get('webhook_id=88888888', token))],
      ['429', () => fetchWith(limited, get(`webhook_id=${id}`, token))],
      ['500', () => fetchWith({ DB: broken() }, get(`webhook_id=${id}`, token))],
      ['503', () => fetchWith({ DB: overloaded() }, get(`webhook_id=${id}`, token))],
      ['503 object', () => fetchWith(objectDown, get(`webhook_id=${id}`, token))],
    ]);
  });

  it('documents every reply of POST .../filter/test', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = 'oa-filter-test';
    const token = bearer(await tokenFor(app));
    const { id } = await registerWebhook(app, { filter: { 'data.a': { $in_set: true } } });
    const event = { type: 'NEW_NFT', data: { a: 'x' } };
    const post = (headers: Record<string, string>, body: unknown, type?: string) =>
      requestTo('POST', FILTER_TEST_PATH, headers, body, type);
    await expectEach('post', FILTER_TEST_PATH, [
      ['200', () => fetchWith({}, post(token, { filter: { 'data.a': 'x' }, event }))],
      // Not matching: why, with the value found, and without one (a missing path).
      ['200 webhook', () => fetchWith({}, post(token, { webhook_id: id, event }))],
      ['200 missing', () => fetchWith({}, post(token, { filter: { $or: [{ 'data.b': { $gt: '1' } }] }, event }))],
      ['200 $not', () => fetchWith({}, post(token, { filter: { $not: {} }, event }))],
      ['400', () => fetchWith({}, post(token, { filter: { 'data.a': { $gt: 'x' } }, event }))],
      ['401', () => fetchWith({}, post({}, {}))],
      ['404', () => fetchWith({}, post(token, { webhook_id: '66666666', event }))],
      ['413', () => fetchWith({}, post(token, { event, pad: 'x'.repeat(80_000) }))],
      ['415', () => fetchWith({}, post(token, { event }, 'text/plain'))],
      ['429', () => fetchWith(limited, post(token, { webhook_id: id, event }))],
      ['500', () => fetchWith({ DB: broken() }, post(token, { webhook_id: id, event }))],
      ['503', () => fetchWith({ DB: overloaded() }, post(token, { webhook_id: id, event }))],
      ['503 object', () => fetchWith(objectDown, post(token, { webhook_id: id, event }))],
    ]);
    // The schema holds the rule: a why exactly when the event does not match.
    const match = resolve(doc.components.schemas.FilterMatch);
    const why = { path: 'data.a', operator: '$eq', expected: 'y', found: 'x' };
    expect(validate(match, { matches: false, why }).valid).toBe(true);
    expect(validate(match, { matches: false, why: { ...why, path: null } }).valid).toBe(true);
    expect(validate(match, { matches: false }).valid).toBe(false);
    expect(validate(match, { matches: true, why }).valid).toBe(false);
    expect(validate(match, { matches: false, why: { ...why, operator: '$regex' } }).valid).toBe(false);
    await expectSchemaAgrees('POST', FILTER_TEST_PATH, await tokenFor(app), [
      JSON.stringify({ filter: { 'data.a': 1 }, event }),
      JSON.stringify({ filter: null, event }),
      JSON.stringify({ webhook_id: id, event }),
      JSON.stringify({ event }),
      JSON.stringify({ filter: {}, event: { type: 'NEW_NFT' } }),
      JSON.stringify({ filter: {}, event: { type: 'NEW_NFT', data: [] } }),
    ]);
  });

  it('documents the filter of a webhook on POST and PATCH, and refuses what the schema refuses', async () => {
    const app = 'oa-filter-webhook';
    const token = bearer(await tokenFor(app));
    const created = await fetchWith(
      {},
      requestTo('POST', PATH, token, { url: 'https://f.example.com/h', filter: { 'data.contract': '0xab' } }),
    );
    expect(created.status).toBe(201);
    await expectDocumented(created, 'post', PATH);
    const { value } = (await created.clone().json()) as { value: { webhook_id: number } };
    const patched = await fetchWith(
      {},
      requestTo('PATCH', PATH, token, { webhook_id: value.webhook_id, filter: null }),
    );
    expect(patched.status).toBe(200);
    await expectDocumented(patched, 'patch', PATH);
    const refused = await fetchWith({}, requestTo('POST', PATH, token, { url: 'https://g.example.com/h', filter: [] }));
    expect(refused.status).toBe(400);
    await expectDocumented(refused, 'post', PATH);
  });
});
