// The portal's operations (PATCH, stats, resend, the event catalog) and the read-only scope,
// checked against docs/openapi.json with real replies, status by status.
import { SELF } from 'cloudflare:test';
import { exportJWK, generateKeyPair } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RESEND_PATH, STATS_PATH } from '../src/deliveries/routes';
import { EVENT_TYPES_PATH } from '../src/events/routes';
import { endpointSql } from './helpers/objects';
import {
  broken,
  expectDocumented,
  type Method,
  type Node,
  overloaded,
  paths,
  requestTo,
  resolve,
  validate,
} from './helpers/openapi';
import { fetchAndWait, fetchWith, ORIGIN, PATH, publishEvent, put, registerWebhook } from './helpers/requests';
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
  // Every documented status was seen.
  expect([...new Set(seen)].sort()).toEqual(Object.keys(paths[path]?.[method]?.responses ?? {}).sort());
}

const limited = { APP_RATE_LIMITER: { limit: async () => ({ success: false }) } };

describe('docs/openapi.json: the portal operations', () => {
  it('documents every reply of PATCH', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = 'oa-patch';
    const token = bearer(await tokenFor(app));
    const ro = bearer(await tokenFor(app, { scope: 'webhooks:read' }));
    const a = await registerWebhook(app, { url: 'https://a.example.com/h' });
    await registerWebhook(app, { url: 'https://b.example.com/h' });
    const patch = (headers: Record<string, string>, body: unknown, type?: string) =>
      requestTo('PATCH', PATH, headers, body, type);
    await expectEach('patch', PATH, [
      ['200', () => fetchWith({}, patch(token, { webhook_id: a.id, description: 'd', rate_limit: 10 }))],
      ['200 no change', () => fetchWith({}, patch(token, { webhook_id: a.id }))],
      ['400', () => fetchWith({}, patch(token, { webhook_id: a.id, rate_limit: 0 }))],
      ['401', () => fetchWith({}, patch({}, {}))],
      ['403', () => fetchWith({}, patch(ro, { webhook_id: a.id, description: 'x' }))],
      ['404', () => fetchWith({}, patch(token, { webhook_id: '77777777', description: 'x' }))],
      ['409', () => fetchWith({}, patch(token, { webhook_id: a.id, url: 'https://b.example.com/h' }))],
      ['413', () => fetchWith({}, patch(token, { webhook_id: a.id, description: 'x'.repeat(17000) }))],
      ['415', () => fetchWith({}, patch(token, { webhook_id: a.id }, 'text/plain'))],
      ['429', () => fetchWith(limited, patch(token, { webhook_id: a.id }))],
      ['500', () => fetchWith({ DB: broken() }, patch(token, { webhook_id: a.id, description: 'y' }))],
      ['503', () => fetchWith({ DB: overloaded() }, patch(token, { webhook_id: a.id, description: 'y' }))],
    ]);
  });

  it('documents every reply of GET .../stats', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = 'oa-stats';
    const token = bearer(await tokenFor(app));
    const { id } = await registerWebhook(app);
    await publishEvent(app);
    const get = (query: string, headers: Record<string, string>) =>
      new Request(`${ORIGIN}${STATS_PATH}?${query}`, { headers });
    await expectEach('get', STATS_PATH, [
      ['200', () => fetchWith({}, get(`webhook_id=${id}`, token))],
      ['400', () => fetchWith({}, get('webhook_id=x', token))],
      ['401', () => fetchWith({}, get(`webhook_id=${id}`, {}))],
      ['404', () => fetchWith({}, get('webhook_id=88888888', token))],
      ['429', () => fetchWith(limited, get(`webhook_id=${id}`, token))],
      ['500', () => fetchWith({ DB: broken() }, get(`webhook_id=${id}`, token))],
      ['503', () => fetchWith({ DB: overloaded() }, get(`webhook_id=${id}`, token))],
    ]);
  });

  it('documents every reply of POST .../delivery/resend', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = 'oa-resend';
    const token = bearer(await tokenFor(app));
    const { id } = await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    const off = await registerWebhook(app, { url: 'https://off.example.com/h' });
    await publishEvent(app);
    const [offDelivery] = (
      await endpointSql<{ id: string }>(off.id, 'SELECT CAST(delivery_id AS TEXT) AS id FROM deliveries')
    ).map((r) => r.id);
    expect(offDelivery).toBeDefined();
    await put({ webhook_id: off.id, is_enabled: false }, token);
    const queue = {};
    // The application's object fails (which delivery is whose is asked of it first).
    const objectDown = {
      APPLICATIONS: {
        getByName: () => ({
          locate: async () => {
            throw new Error('object unavailable');
          },
        }),
      },
    };
    const resend = (headers: Record<string, string>, body: unknown, type?: string) =>
      requestTo('POST', RESEND_PATH, headers, body, type);
    await expectEach('post', RESEND_PATH, [
      ['202', () => fetchAndWait(queue, resend(token, { delivery_id: deliveryIds[0] }))],
      ['400', () => fetchWith(queue, resend(token, { delivery_id: 'x' }))],
      ['401', () => fetchWith(queue, resend({}, {}))],
      ['403', async () => fetchWith(queue, resend(bearer(await tokenFor(app, { scope: 'webhooks:read' })), {}))],
      ['404', () => fetchWith(queue, resend(token, { delivery_id: '99999999' }))],
      ['409', () => fetchWith(queue, resend(token, { delivery_id: offDelivery }))],
      ['413', () => fetchWith(queue, resend(token, { pad: 'x'.repeat(9000) }))],
      ['415', () => fetchWith(queue, resend(token, {}, 'text/plain'))],
      ['429', () => fetchWith({ ...queue, ...limited }, resend(token, { delivery_id: deliveryIds[0] }))],
      ['500', () => fetchWith({ ...queue, DB: broken() }, resend(token, { delivery_id: deliveryIds[0] }))],
      ['503', () => fetchWith({ ...queue, DB: overloaded() }, resend(token, { delivery_id: deliveryIds[0] }))],
      ['503 object', () => fetchWith(objectDown, resend(token, { delivery_id: deliveryIds[0] }))],
    ]);
    expect(id).toBeTruthy();
  });

  it('documents every reply of GET /v1.0/app/nft/event-types', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    const token = bearer(await tokenFor('oa-catalog'));
    const get = (headers: Record<string, string>) => new Request(ORIGIN + EVENT_TYPES_PATH, { headers });
    // Keys that cannot be fetched: a JWKS URL that does not answer, and an RS256 token.
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const rs = await tokenFor('oa-catalog', {}, { key: privateKey, alg: 'RS256', header: { kid: 'k1' } });
    void exportJWK(publicKey);
    const unreachable = {
      JWT_SECRET: '',
      JWT_JWKS_URL: 'https://idp.test/unreachable/jwks',
      JWT_ALGORITHMS: 'RS256',
    };
    await expectEach('get', EVENT_TYPES_PATH, [
      ['200', () => fetchWith({}, get(token))],
      ['401', () => fetchWith({}, get({}))],
      ['429', () => fetchWith(limited, get(token))],
      ['500 configuration', () => fetchWith({ JWT_SECRET: '' }, get(token))],
      [
        '503',
        () => {
          vi.spyOn(globalThis, 'fetch').mockRejectedValue(new Error('connection refused'));
          return fetchWith(unreachable, get(bearer(rs)));
        },
      ],
    ]);
  });

  it('documents the 403 of every operation that changes something, with its own code', async () => {
    const app = 'oa-scope';
    const ro = bearer(await tokenFor(app, { scope: 'webhooks:read' }));
    const cases: [Method, string][] = [
      ['post', PATH],
      ['put', PATH],
      ['patch', PATH],
      ['delete', PATH],
      ['post', `${PATH}/secret`],
      ['post', `${PATH}/test`],
      ['post', `${PATH}/recover`],
      ['post', RESEND_PATH],
    ];
    for (const [method, path] of cases) {
      const res = await SELF.fetch(ORIGIN + path + (method === 'delete' ? '?webhook_id=1' : ''), {
        method: method.toUpperCase(),
        headers: { ...ro, 'content-type': 'application/json' },
        body: method === 'delete' ? undefined : '{}',
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      await expectDocumented(res, method, path);
    }
  });

  it('its PATCH and resend request schemas accept and refuse what the Worker does', async () => {
    const app = 'oa-schemas';
    const token = bearer(await tokenFor(app));
    const { id } = await registerWebhook(app);
    const schema = (path: string, method: Method) =>
      ((resolve(paths[path]?.[method]?.requestBody) as Node).content as Node)['application/json'] as {
        schema: unknown;
      };
    const patchSchema = schema(PATH, 'patch').schema;
    for (const body of [
      { webhook_id: Number(id) },
      { webhook_id: id, description: null, rate_limit: 1000, event_types: null },
      { webhook_id: id, rate_limit: 0 },
      { webhook_id: id, rate_limit: 1001 },
      { webhook_id: id, description: 'x'.repeat(257) },
      { webhook_id: id, event_types: [] },
      { description: 'x' },
    ]) {
      const res = await SELF.fetch(requestTo('PATCH', PATH, token, body));
      expect(validate(patchSchema, body).valid, JSON.stringify(body).slice(0, 80)).toBe(res.status === 200);
    }
    const resendSchema = schema(RESEND_PATH, 'post').schema;
    for (const body of [{ delivery_id: 0 }, { delivery_id: '0' }, { delivery_id: 1.5 }, {}, { delivery_id: null }]) {
      const res = await SELF.fetch(requestTo('POST', RESEND_PATH, token, body));
      expect(res.status).toBe(400);
      expect(validate(resendSchema, body).valid, JSON.stringify(body)).toBe(false);
    }
    expect(validate(resendSchema, { delivery_id: '9007199254740993' }).valid).toBe(true);
  });
});
