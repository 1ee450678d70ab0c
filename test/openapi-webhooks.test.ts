// docs/openapi.json on the webhooks themselves: GET, POST, PUT and DELETE of /v1.0/app/nft/webhook.
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { insertWebhook, OVERLOADED } from './helpers/database';
import {
  deleteRequest,
  doc,
  expectDocumented,
  expectSchemaAgrees,
  failingDb,
  limited,
  putRequest,
} from './helpers/openapi';
import { expectValue, SECRET, type Webhook } from './helpers/replies';
import { fetchWith, MAX_BODY_BYTES, MAX_WEBHOOK_BODY_BYTES, PATH, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('docs/openapi.json: every reply of each webhook operation, its status, body schema and headers', () => {
  // app-a's webhook `id` and app-b's `foreign`. The operations run in this order: GET, POST, then
  // PUT (which disables `id`), then DELETE (which deletes it).
  let token: string;
  let tokenB: string;
  let id: string;
  let foreign: string;
  beforeAll(async () => {
    token = await tokenFor('app-a');
    id = await insertWebhook('app-a');
    foreign = await insertWebhook('app-b');
    tokenB = await tokenFor('app-b');
  });

  it('documents every reply of GET', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
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
      ['503', () => fetchWith({ DB: failingDb(OVERLOADED) }, getRequest('', bearer(token)))],
    ];
    for (const [expected, send] of get) {
      const res = await send();
      expect(String(res.status), `GET ${expected}`).toBe(expected.slice(0, 3));
      await expectDocumented(res, 'get');
    }
  });

  it('documents every reply of POST, a replayed one marked Idempotent-Replayed', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
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
      ['413', () => fetchWith({}, postRequest(bearer(token), `{"pad":"${'x'.repeat(MAX_WEBHOOK_BODY_BYTES)}"}`))],
      ['415', () => fetchWith({}, postRequest(bearer(token), hook('x'), 'text/plain'))],
      ['422', () => fetchWith({}, postRequest(keyed, hook('other')))],
      ['429', () => fetchWith(limited, postRequest(bearer(token), hook('x')))],
      ['500', () => fetchWith({ DB: failingDb('D1_ERROR: no such table') }, postRequest(bearer(token), hook('y')))],
      ['503', () => fetchWith({ DB: failingDb(OVERLOADED) }, postRequest(bearer(token), hook('z')))],
    ];
    for (const [expected, send] of post) {
      const res = await send();
      expect(String(res.status), `POST ${expected}`).toBe(expected.slice(0, 3));
      if (expected === '201 replayed') expect(res.headers.get('idempotent-replayed')).toBe('true');
      await expectDocumented(res, 'post');
    }
  });

  it('documents every reply of PUT', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
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
        () => fetchWith({ DB: failingDb(OVERLOADED) }, putRequest(bearer(token), JSON.stringify({ webhook_id: id }))),
      ],
    ];
    for (const [expected, send] of put) {
      const res = await send();
      expect(String(res.status), `PUT ${expected}`).toBe(expected.slice(0, 3));
      await expectDocumented(res, 'put');
    }
  });

  it('documents every reply of DELETE', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const del: [string, () => Promise<Response>][] = [
      ['400', () => fetchWith({}, deleteRequest('webhook_id=abc', bearer(token)))],
      ['401', () => fetchWith({}, deleteRequest(`webhook_id=${id}`, {}))],
      ['404', () => fetchWith({}, deleteRequest(`webhook_id=${foreign}`, bearer(token)))],
      ['429', () => fetchWith(limited, deleteRequest(`webhook_id=${id}`, bearer(token)))],
      [
        '500',
        () => fetchWith({ DB: failingDb('D1_ERROR: no such table') }, deleteRequest(`webhook_id=${id}`, bearer(token))),
      ],
      ['503', () => fetchWith({ DB: failingDb(OVERLOADED) }, deleteRequest(`webhook_id=${id}`, bearer(token)))],
      ['200', () => fetchWith({}, deleteRequest(`webhook_id=${id}`, bearer(token)))],
    ];
    for (const [expected, send] of del) {
      const res = await send();
      expect(String(res.status), `DELETE ${expected}`).toBe(expected);
      await expectDocumented(res, 'delete');
    }
  });
});

describe('docs/openapi.json: the webhook request bodies', () => {
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
});

describe('docs/openapi.json: the fields of a webhook', () => {
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
      'destination',
      'headers',
      'is_enabled',
      'event_types',
      'description',
      'rate_limit',
      'filter',
      'ordering',
      'created_at',
      'updated_at',
      'disabled_reason',
      'disabled_at',
      'failing_since',
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
});
