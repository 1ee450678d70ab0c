import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { countingDb, snapshot } from './helpers/database';
import { deliverDue, endpointSql } from './helpers/objects';
import { expectEnvelope, expectValue } from './helpers/replies';
import { fetchAndWait, ORIGIN, PATH, publishEvent, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const MESSAGES: Record<number, string> = {
  64060: 'query fail',
  64061: 'create fail',
  64062: 'update fail',
  64063: 'delete fail',
  64064: 'event fail',
  64065: 'secret fail',
};

/**
 * Every operation a read-only token may not use: those that change something, and reading a
 * signing secret (whoever holds it can forge the application's webhooks). Method, path, body (with
 * the ids filled in), its code.
 */
const writing = (id: string, deliveryId: string) =>
  [
    ['POST', PATH, { url: 'https://scoped.example.com/new' }, 64061],
    ['PUT', PATH, { webhook_id: id, is_enabled: false }, 64062],
    ['PATCH', PATH, { webhook_id: id, description: 'changed' }, 64062],
    ['GET', `${PATH}/secret?webhook_id=${id}`, null, 64065],
    ['DELETE', `${PATH}?webhook_id=${id}`, null, 64063],
    ['POST', `${PATH}/test`, { webhook_id: id }, 64064],
    ['POST', `${PATH}/secret`, { webhook_id: id }, 64065],
    ['POST', `${PATH}/recover`, { webhook_id: id, since: new Date(Date.now() - 3_600_000).toISOString() }, 64064],
    ['POST', `${PATH}/delivery/resend`, { delivery_id: deliveryId }, 64064],
    ['POST', `${PATH}/values`, { webhook_id: id, add: ['x'] }, 64062],
  ] as const;

/** The read operations (a signing secret aside). */
const reading = (id: string, deliveryId: string) => [
  [PATH, 64060],
  [`${PATH}?webhook_id=${id}`, 64060],
  [`${PATH}/delivery?webhook_id=${id}`, 64060],
  [`${PATH}/delivery?delivery_id=${deliveryId}`, 64060],
  [`${PATH}/stats?webhook_id=${id}`, 64060],
  [`${PATH}/values?webhook_id=${id}`, 64060],
  ['/v1.0/app/nft/event-types', 64060],
];

const send = (method: string, path: string, body: unknown, headers: Record<string, string>, overrides = {}) =>
  fetchAndWait(
    overrides,
    new Request(ORIGIN + path, {
      method,
      headers: body === null ? headers : { 'content-type': 'application/json', ...headers },
      body: body === null ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );

async function setUp() {
  const app = freshApp();
  const { id } = await registerWebhook(app);
  const { deliveryIds } = await publishEvent(app);
  // Its first attempt made (and its failure recorded in D1) now, not while a test compares the stores.
  await deliverDue(id);
  return { app, id, deliveryId: deliveryIds[0] as string };
}

/** How identity providers write a read-only token's scopes: `scope` or `scp`, a string or an array. */
const READ_ONLY: [string, Record<string, unknown>][] = [
  ['scope "webhooks:read"', { scope: 'webhooks:read' }],
  ['scope among others', { scope: 'openid webhooks:read profile' }],
  ['scope with events:publish', { scope: 'webhooks:read events:publish' }],
  ['scope with extra spaces', { scope: ' webhooks:read  openid ' }],
  ['a scope array', { scope: ['webhooks:read'] }],
  ['a scp string', { scp: 'webhooks:read' }],
  ['a scp array (Okta)', { scp: ['openid', 'webhooks:read'] }],
  ['scope and scp together', { scope: 'openid', scp: ['webhooks:read'] }],
];

describe('read-only tokens (scope webhooks:read without webhooks:write)', () => {
  it.each(READ_ONLY)(
    'are refused 403 insufficient_scope with each operation code on every change and on the secret, and nothing changes (%s)',
    async (_name, claims) => {
      const { app, id, deliveryId } = await setUp();
      const token = bearer(await tokenFor(app, claims));
      const before = await snapshot();
      const deliveries = await endpointSql(id, 'SELECT * FROM deliveries ORDER BY delivery_id');
      for (const [method, path, body, code] of writing(id, deliveryId)) {
        const counted = countingDb(env.DB);
        const res = await send(method, path, body, token, { DB: counted.db });
        expect(res.headers.get('www-authenticate'), `${method} ${path}`).toBe(
          'Bearer realm="nft-webhook", error="insufficient_scope", scope="webhooks:write"',
        );
        expect(res.headers.get('x-error-detail')).toBe('token lacks the webhooks:write scope');
        // Refused before storage: no D1, so no bookmark.
        expect(res.headers.get('x-d1-bookmark')).toBeNull();
        expect(counted.calls()).toBe(0);
        // No secret in the reply.
        expect(await res.clone().text()).not.toContain('whsec_');
        await expectEnvelope(res, 403, code, MESSAGES[code] as string);
      }
      expect(await snapshot()).toEqual(before);
      expect(await endpointSql(id, 'SELECT * FROM deliveries ORDER BY delivery_id')).toEqual(deliveries);
    },
  );

  it.each(READ_ONLY)('may read webhooks, the delivery log, stats and the event catalog (%s)', async (_name, claims) => {
    const { app, id, deliveryId } = await setUp();
    const token = bearer(await tokenFor(app, claims));
    for (const [path] of reading(id, deliveryId)) {
      const res = await send('GET', path as string, null, token);
      expect(res.status, path as string).toBe(200);
      expect(((await res.json()) as { return: number }).return).toBe(0);
    }
  });

  it('is checked after authentication and before the rate limit and the input', async () => {
    const app = freshApp();
    // A bad token is 401 whatever its scope claim would be.
    const bad = await send('PATCH', PATH, 'not json', bearer('x.y.z'));
    await expectEnvelope(bad, 401, 20004, 'Invalid jwt token');
    // A limiter that refuses everything is never asked: the scope refuses first.
    let asked = 0;
    const limiter = {
      limit: async () => {
        asked++;
        return { success: false };
      },
    };
    const token = bearer(await tokenFor(app, { scope: 'webhooks:read' }));
    const res = await send('PATCH', PATH, 'not json', token, { APP_RATE_LIMITER: limiter });
    await expectEnvelope(res, 403, 64062, 'update fail');
    expect(asked).toBe(0);
    // A read with the same token is limited as before.
    const read = await send('GET', PATH, null, token, { APP_RATE_LIMITER: limiter });
    await expectEnvelope(read, 429, 64060, 'query fail');
    expect(asked).toBe(1);
  });
});

describe('tokens whose scopes cannot be read', () => {
  it.each([
    ['a number', { scope: 42 }],
    ['null', { scope: null }],
    ['an object', { scp: { read: true } }],
    ['an empty string', { scope: '' }],
    ['spaces only', { scp: '   ' }],
    ['an empty array', { scope: [] }],
    ['an empty string in an array', { scope: ['webhooks:read', ''] }],
    ['a number in an array', { scp: ['webhooks:read', 7] }],
    ['two scopes in one array entry', { scp: ['webhooks:read webhooks:write'] }],
    ['comma-separated scopes', { scope: 'webhooks:read,webhooks:write' }],
    ['comma-separated scopes, read only', { scope: 'openid,webhooks:read' }],
    ['a comma in an array entry', { scp: ['webhooks:read,webhooks:write'] }],
    ['a tab between scopes', { scope: 'webhooks:read\twebhooks:write' }],
    ['a quote', { scope: 'webhooks:"read"' }],
    ['a readable scope beside an unreadable scp', { scope: 'webhooks:write', scp: 5 }],
  ])('are refused 401 invalid_token on a read and a change, touching no storage (%s)', async (_name, claims) => {
    const { app, id } = await setUp();
    const token = bearer(await tokenFor(app, claims));
    const before = await snapshot();
    for (const [method, path, body] of [
      ['GET', `${PATH}?webhook_id=${id}`, null],
      ['PATCH', PATH, { webhook_id: id, description: 'changed' }],
      ['DELETE', `${PATH}?webhook_id=${id}`, null],
    ] as const) {
      const counted = countingDb(env.DB);
      const res = await send(method, path, body, token, { DB: counted.db });
      expect(res.headers.get('www-authenticate'), `${method} ${path}`).toBe(
        'Bearer realm="nft-webhook", error="invalid_token", error_description="token scope claim is not a list of scopes"',
      );
      expect(counted.calls()).toBe(0);
      await expectEnvelope(res, 401, 20004, 'Invalid jwt token');
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe('tokens that may write', () => {
  it.each([
    ['no scope claim', {}],
    ['an unrelated scope', { scope: 'openid profile' }],
    ['webhooks:write', { scope: 'webhooks:write' }],
    ['webhooks:read and webhooks:write', { scope: 'webhooks:read webhooks:write' }],
    ['a scope that only looks like it', { scope: 'webhooks:readonly' }],
    ['a scope array with both', { scope: ['webhooks:read', 'webhooks:write'] }],
    ['a scp array with both', { scp: ['webhooks:write', 'webhooks:read'] }],
    ['webhooks:read in scope and webhooks:write in scp', { scope: 'webhooks:read', scp: 'webhooks:write' }],
  ])('keep every right with %s', async (_name, claims) => {
    const { app, id, deliveryId } = await setUp();
    const token = bearer(await tokenFor(app, claims));
    const statuses: number[] = [];
    for (const [method, path, body] of writing(id, deliveryId)) {
      const res = await send(method, path, body, token);
      statuses.push(res.status);
    }
    // POST 201, PUT (disables) 200, PATCH 200, the secret 200, DELETE 200; then the webhook is gone: 404 for the rest.
    expect(statuses).toEqual([201, 200, 200, 200, 200, 404, 404, 404, 404, 404]);
  });

  it('a token without scopes changes a webhook as before (PATCH, test, resend on an enabled webhook)', async () => {
    const { app, id, deliveryId } = await setUp();
    const token = bearer(await tokenFor(app));
    await expectValue(await send('PATCH', PATH, { webhook_id: id, description: 'x' }, token));
    await expectValue(await send('POST', `${PATH}/test`, { webhook_id: id }, token), 202);
    await expectValue(await send('POST', `${PATH}/delivery/resend`, { delivery_id: deliveryId }, token), 202);
  });
});
