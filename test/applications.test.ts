// PUT and GET /v1.0/platform/nft/application: an application's retention as the platform sets it,
// kept in D1 (with an audit record) and by the application's objects; the platform:admin scope.
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  APPLICATION_URL,
  adminHeaders,
  applicationAudit,
  applicationRow,
  appQuery,
  callApplication,
} from './helpers/applications';
import { applicationOf, endpointOf, endpointSql } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectApplicationFail, expectEnvelope, expectInvalidToken, expectValue } from './helpers/replies';
import { fetchWith, publishEvent, registerWebhook } from './helpers/requests';
import { daysAgo } from './helpers/time';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** The retention an object keeps for its application; undefined: none (DELIVERY_RETENTION_DAYS). */
const keptBy = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (_instance, state) => state.storage.kv.get<number>('retention_days'));

const putRetention = async (body: unknown, headers?: Record<string, string>) =>
  callApplication('PUT', headers ?? (await adminHeaders()), { body });

describe('GET /v1.0/platform/nft/application', () => {
  it('answers the default retention for an application the platform never set, writing nothing', async () => {
    const app = freshApp();
    const { value } = await expectValue(await callApplication('GET', await adminHeaders(), { query: appQuery(app) }));
    expect(value).toEqual({ app_id: app, retention_days: 30, default: true, erased: false });
    expect(await applicationRow(app)).toBeNull();
  });

  it.each([
    ['', 'app_id query parameter missing', 'app_id is required'],
    ['app_id=', 'empty', 'app_id must be a string of 1 to 255 characters'],
    ['app_id=a%01b', 'a control character', 'app_id must be a string of 1 to 255 characters'],
    [`app_id=${'a'.repeat(256)}`, 'too long', 'app_id must be a string of 1 to 255 characters'],
    ['app_id=a&app_id=b', 'repeated', 'app_id must be given once'],
  ])('answers 400 for %j (%s)', async (query, _why, detail) => {
    const res = await callApplication('GET', await adminHeaders(), { query });
    expect(res.headers.get('x-error-detail')).toMatch(new RegExp(`^${detail}`));
    await expectApplicationFail(res, 400);
  });
});

describe('PUT /v1.0/platform/nft/application', () => {
  it('sets the retention in D1 with an audit record, and the application object keeps it', async () => {
    const app = freshApp();
    const { value } = await expectValue(await putRetention({ app_id: app, retention_days: 90 }));
    expect(value).toEqual({ app_id: app, retention_days: 90, default: false, erased: false });
    expect(await applicationRow(app)).toMatchObject({ app_id: app, retention_days: 90, erased_at: null });
    expect(await keptBy(applicationOf(app))).toBe(90);
    const read = await expectValue(await callApplication('GET', await adminHeaders(), { query: appQuery(app) }));
    expect(read.value).toEqual(value);
    // A change is recorded with the days before it; the same days again record nothing.
    await expectValue(await putRetention({ app_id: app, retention_days: 7 }));
    await expectValue(await putRetention({ app_id: app, retention_days: 7 }));
    const audit = await applicationAudit(app);
    expect(audit.map((a) => [a.action, a.detail, a.actor])).toEqual([
      ['retention', { retention_days: 90, before: null }, 'platform-admin'],
      ['retention', { retention_days: 7, before: 90 }, 'platform-admin'],
    ]);
    expect(await keptBy(applicationOf(app))).toBe(7);
  });

  it('tells every endpoint the application handed deliveries to, and new ones with their first handover', async () => {
    const app = freshApp();
    receiver();
    const before = await registerWebhook(app);
    await publishEvent(app);
    expect(await keptBy(endpointOf(before.id))).toBeUndefined();
    await expectValue(await putRetention({ app_id: app, retention_days: 120 }));
    expect(await keptBy(endpointOf(before.id))).toBe(120);
    // Its endpoint applies it from its next alarm (at once): a delivery that ended 60 days ago,
    // which DELIVERY_RETENTION_DAYS (30) would delete, is kept (archived, as it ended long ago).
    await endpointSql(
      before.id,
      `INSERT INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, created_at)
       VALUES (7, 'evt_old', 'evt_old', ?1, 'NEW_NFT', '{}', 'succeeded', ?2)`,
      app,
      daysAgo(60),
    );
    await runDurableObjectAlarm(endpointOf(before.id));
    expect(
      await endpointSql(
        before.id,
        'SELECT delivery_id AS id FROM deliveries WHERE delivery_id = 7 UNION ALL SELECT delivery_id FROM archived WHERE delivery_id = 7',
      ),
    ).toEqual([{ id: 7 }]);
    const after = await registerWebhook(app, { url: `https://${app}.example.com/other` });
    expect(await keptBy(endpointOf(after.id))).toBeUndefined();
    await publishEvent(app);
    expect(await keptBy(endpointOf(after.id))).toBe(120);
  });

  it.each([
    [{ retention_days: 30 }, 'app_id is required'],
    [{ app_id: '', retention_days: 30 }, 'app_id must be a string'],
    [{ app_id: 7, retention_days: 30 }, 'app_id must be a string'],
    [{ app_id: 'x\u0000y', retention_days: 30 }, 'app_id must be a string'],
    [{ app_id: 'APP' }, 'retention_days must be a whole number from 1 to 400'],
    [{ app_id: 'APP', retention_days: 0 }, 'retention_days must be a whole number from 1 to 400'],
    [{ app_id: 'APP', retention_days: 401 }, 'retention_days must be a whole number from 1 to 400'],
    [{ app_id: 'APP', retention_days: 1.5 }, 'retention_days must be a whole number from 1 to 400'],
    [{ app_id: 'APP', retention_days: '30' }, 'retention_days must be a whole number from 1 to 400'],
    [{ app_id: 'APP', retention_days: null }, 'retention_days must be a whole number from 1 to 400'],
    ['[1]', 'body must be a JSON object'],
    ['{"app_id": ', null],
  ])('answers 400 for %j, changing nothing', async (body, detail) => {
    const app = freshApp();
    const sent = typeof body === 'string' ? body : JSON.parse(JSON.stringify(body).replace('"APP"', `"${app}"`));
    const res = await putRetention(sent);
    if (detail !== null) expect(res.headers.get('x-error-detail')).toMatch(new RegExp(`^${detail}`));
    await expectApplicationFail(res, 400);
    expect(await applicationRow(app)).toBeNull();
    expect(await applicationAudit(app)).toEqual([]);
    expect(await keptBy(applicationOf(app))).toBeUndefined();
  });

  it('takes the bounds, 1 and 400 days', async () => {
    const app = freshApp();
    await expectValue(await putRetention({ app_id: app, retention_days: 1 }));
    expect((await applicationRow(app))?.retention_days).toBe(1);
    await expectValue(await putRetention({ app_id: app, retention_days: 400 }));
    expect((await applicationRow(app))?.retention_days).toBe(400);
  });

  it('answers 503 when the application object cannot be told; repeating it applies it', async () => {
    const app = freshApp();
    const failing = { getByName: () => ({ setRetention: () => Promise.reject(new Error('object reset')) }) };
    const res = await callApplication(
      'PUT',
      await adminHeaders(),
      { body: { app_id: app, retention_days: 9 } },
      {
        APPLICATIONS: failing,
      },
    );
    expect(res.headers.get('retry-after')).toBe('2');
    await expectApplicationFail(res, 503);
    expect(await keptBy(applicationOf(app))).toBeUndefined();
    await expectValue(await putRetention({ app_id: app, retention_days: 9 }));
    expect(await keptBy(applicationOf(app))).toBe(9);
  });
});

describe('/v1.0/platform/nft/application: the platform:admin scope', () => {
  const CHALLENGE = 'Bearer realm="nft-webhook", error="insufficient_scope", scope="platform:admin"';
  const requests = (app: string) =>
    [
      ['GET', { query: appQuery(app) }],
      ['PUT', { body: { app_id: app, retention_days: 5 } }],
      ['DELETE', { query: appQuery(app) }],
    ] as const;

  it.each([
    ['no scope', () => tokenFor('platform-admin')],
    ['the publish scope', () => platformToken()],
    ['a read-only token', () => tokenFor('platform-admin', { scope: 'webhooks:read' })],
    ['a write token', () => tokenFor('platform-admin', { scope: 'webhooks:read webhooks:write' })],
    ['an application token of that application', (app: string) => tokenFor(app)],
  ])('answers 403 with the insufficient_scope challenge to %s, changing nothing', async (_who, token) => {
    const app = freshApp();
    const headers = bearer(await token(app));
    for (const [method, options] of requests(app)) {
      const res = await callApplication(method, headers, options);
      expect(res.headers.get('www-authenticate')).toBe(CHALLENGE);
      await expectApplicationFail(res, 403);
    }
    expect(await applicationRow(app)).toBeNull();
    expect(await keptBy(applicationOf(app))).toBeUndefined();
  });

  it('answers 401 without a token', async () => {
    const app = freshApp();
    for (const [method, options] of requests(app)) await expectInvalidToken(await callApplication(method, {}, options));
    expect(await applicationRow(app)).toBeNull();
  });

  it('takes the scope among others, in `scp` too', async () => {
    const app = freshApp();
    for (const claims of [{ scope: 'events:publish platform:admin' }, { scp: ['platform:admin'] }]) {
      const headers = bearer(await tokenFor('platform-admin', claims));
      await expectValue(await callApplication('GET', headers, { query: appQuery(app) }));
    }
  });

  it('answers 405 with Allow for another method', async () => {
    const app = freshApp();
    const res = await fetchWith(
      {},
      new Request(`${APPLICATION_URL}?${appQuery(app)}`, { method: 'POST', headers: await adminHeaders() }),
    );
    expect(res.headers.get('allow')).toBe('DELETE, GET, PUT');
    await expectEnvelope(res, 405, 405, 'method not allowed');
  });
});
