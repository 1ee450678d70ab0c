import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { insertWebhook, snapshot, webhookRow } from './helpers/database';
import {
  expectDeleteFail,
  expectEnvelope,
  expectInvalidToken,
  expectSuccess,
  expectUpdateFail,
} from './helpers/replies';
import { fetchWorker, postJson, readLog, URL_ } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const deleteRequest = (id: string, headers: Record<string, string>) =>
  new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers });

describe('rate limits', () => {
  it('Retry-After matches the period wrangler.toml sets, in every environment, for every limit', () => {
    const configs = JSON.parse(env.TEST_RATELIMITS) as Record<
      string,
      { name: string; simple: { limit: number; period: number } }[]
    >;
    expect(Object.keys(configs).sort()).toEqual(['local', 'production', 'staging']);
    for (const limits of Object.values(configs)) {
      expect(limits.map((l) => l.name).sort()).toEqual([
        'APP_RATE_LIMITER',
        'AUTH_FAILURE_RATE_LIMITER',
        'PUBLISH_RATE_LIMITER',
      ]);
      for (const limit of limits) expect(limit.simple.period).toBe(60);
    }
    // Deployed environments limit as the local run does.
    expect(configs.production).toEqual(configs.staging?.map((l) => ({ ...l, namespace_id: expect.any(String) })));
  });

  it('limits each application: 429 with the op code and Retry-After, changing nothing', async () => {
    const bindings = { ...env, APP_RATE_LIMITER: env.TEST_APP_LIMITER };
    const token = await tokenFor('app-limited');
    for (let i = 0; i < 3; i++) {
      const id = await insertWebhook('app-limited');
      await expectSuccess(await fetchWorker(deleteRequest(id, bearer(token)), bindings));
    }
    const id = await insertWebhook('app-limited');
    const before = await snapshot();

    const deleteRes = await fetchWorker(deleteRequest(id, bearer(token)), bindings);
    const putRes = await fetchWorker(
      new Request(URL_, {
        method: 'PUT',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ webhook_id: id, is_enabled: false }),
      }),
      bindings,
    );

    expect(deleteRes.headers.get('retry-after')).toBe('60');
    await expectDeleteFail(deleteRes, 429);
    await expectUpdateFail(putRes, 429);
    expect(await snapshot()).toEqual(before);
    // Another application has its own budget.
    const other = await insertWebhook('app-unlimited');
    await expectSuccess(await fetchWorker(deleteRequest(other, bearer(await tokenFor('app-unlimited'))), bindings));
  });

  it('counts GET and POST against the same application budget, before their input', async () => {
    const bindings = { ...env, APP_RATE_LIMITER: env.TEST_APP_LIMITER };
    const token = await tokenFor('app-limited-mixed');
    const get = (query: string) => new Request(`${URL_}?${query}`, { headers: bearer(token) });
    const post = (body: string) =>
      new Request(URL_, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body });
    expect((await fetchWorker(get('limit=5'), bindings)).status).toBe(200);
    expect((await fetchWorker(post('{"url":"https://hooks.example.com/limited"}'), bindings)).status).toBe(201);
    expect((await fetchWorker(get('webhook_id=424242'), bindings)).status).toBe(404);
    const before = await snapshot();
    const limitedGet = await fetchWorker(get('limit=0'), bindings);
    const limitedPost = await fetchWorker(post('{"url":"https://hooks.example.com/limited-2"}'), bindings);
    expect(limitedGet.headers.get('retry-after')).toBe('60');
    await expectEnvelope(limitedGet, 429, 64060, 'query fail');
    await expectEnvelope(limitedPost, 429, 64061, 'create fail');
    expect(await snapshot()).toEqual(before);
  });

  it('checks the rate limit before the input', async () => {
    const bindings = { ...env, APP_RATE_LIMITER: env.TEST_APP_LIMITER };
    const token = await tokenFor('app-limited-2');
    for (let i = 0; i < 3; i++) await fetchWorker(deleteRequest('1', bearer(token)), bindings);
    await expectDeleteFail(await fetchWorker(deleteRequest('not-a-number', bearer(token)), bindings), 429);
  });

  it('slows failed authentications per address, never a valid token', async () => {
    const bindings = { ...env, AUTH_FAILURE_RATE_LIMITER: env.TEST_FAILURE_LIMITER };
    const guesser = { 'cf-connecting-ip': '203.0.113.7' };
    const id = await insertWebhook('app-a');
    for (let i = 0; i < 3; i++) {
      await expectInvalidToken(
        await fetchWorker(deleteRequest(id, { ...guesser, authorization: `Bearer x.y.${i}` }), bindings),
      );
    }

    const limited = await fetchWorker(deleteRequest(id, { ...guesser, authorization: 'Bearer x.y.z' }), bindings);
    expect(limited.headers.get('retry-after')).toBe('60');
    await expectDeleteFail(limited, 429);
    await expectDeleteFail(await fetchWorker(deleteRequest(id, guesser), bindings), 429);

    // The same address with a valid token goes through; another address is not affected.
    await expectInvalidToken(
      await fetchWorker(
        deleteRequest(id, { 'cf-connecting-ip': '198.51.100.1', authorization: 'Bearer x.y.z' }),
        bindings,
      ),
    );
    await expectSuccess(
      await fetchWorker(deleteRequest(id, { ...guesser, ...bearer(await tokenFor('app-a')) }), bindings),
    );
    expect(await webhookRow(id)).toBeNull();
  });

  it('lets requests through, logged, when a limiter fails', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const broken = { limit: () => Promise.reject(new Error('limiter down')) };
    const bindings = { ...env, APP_RATE_LIMITER: broken, AUTH_FAILURE_RATE_LIMITER: broken };
    const id = await insertWebhook('app-a');

    await expectInvalidToken(await fetchWorker(deleteRequest(id, { authorization: 'Bearer x.y.z' }), bindings));
    await expectSuccess(await fetchWorker(deleteRequest(id, bearer(await tokenFor('app-a'))), bindings));
    expect(warn.mock.calls.filter((c) => String(c[0]).includes('rate limiter failed'))).toHaveLength(2);
  });
});

describe('the delivery log, test events, recovery and rotation', () => {
  it('count against the application’s rate limit, after authentication and before input', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const limited = { APP_RATE_LIMITER: { limit: async () => ({ success: false }) } };
    const cases: [Response, number][] = [
      [await readLog('bad', headers, limited), 64060],
      [(await postJson('test', 'bad', headers, limited)).res, 64064],
      [(await postJson('recover', 'bad', headers, limited)).res, 64064],
      [(await postJson('secret', 'bad', headers, limited)).res, 64065],
    ];
    for (const [res, code] of cases) {
      expect(res.headers.get('retry-after')).toBe('60');
      await expectEnvelope(res, 429, code, { 64060: 'query fail', 64064: 'event fail', 64065: 'secret fail' }[code]!);
    }
    // A bad token is refused before the limiter is asked.
    const unauth = await readLog('bad', bearer('nope'), limited);
    await expectEnvelope(unauth, 401, 20004, 'Invalid jwt token');
  });
});
