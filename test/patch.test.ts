import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { patchWebhook } from '../src/webhooks/store/patch';
import { auditRows, countingDb, insertWebhook, snapshot } from './helpers/database';
import { expectEnvelope, expectUpdateFail, expectValue, type Webhook } from './helpers/replies';
import { fetchWith, get, post, registerWebhook, URL_ } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

/** PATCH with a body: strings as they are, anything else as JSON. */
function patch(body: unknown, headers: Record<string, string>, contentType = 'application/json'): Promise<Response> {
  return SELF.fetch(patchRequest(body, headers, contentType));
}
const patchRequest = (body: unknown, headers: Record<string, string>, contentType = 'application/json') =>
  new Request(URL_, {
    method: 'PATCH',
    headers: { 'content-type': contentType, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

type PortalWebhook = Webhook & { description: string | null; rate_limit: number | null };

/** The stored row with the portal's columns. */
const stored = (id: string) =>
  env.DB.prepare(
    `SELECT url, is_enabled, event_types, description, rate_limit, updated_at, failing_since
     FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)`,
  )
    .bind(id)
    .first<Record<string, unknown>>();

describe('PATCH /v1.0/app/nft/webhook', () => {
  it('changes only the fields given, answers the webhook, and records the row before', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app, { event_types: ['NEW_NFT'], description: 'first' });
    const before = await stored(id);
    const res = await patch(
      { webhook_id: Number(id), rate_limit: 25 },
      { ...bearer(await tokenFor(app, { jti: 'j-9' })), 'x-request-id': 'req-patch-1' },
    );
    const { value } = await expectValue<PortalWebhook>(res);
    expect(value).toMatchObject({
      webhook_id: Number(id),
      url: `https://${app}.example.com/hook`,
      is_enabled: true,
      event_types: ['NEW_NFT'],
      description: 'first',
      rate_limit: 25,
    });
    expect(Object.keys(value).sort()).toEqual(
      [
        'created_at',
        'description',
        'destination',
        'headers',
        'disabled_at',
        'disabled_reason',
        'failing_since',
        'event_types',
        'filter',
        'ordering',
        'is_enabled',
        'rate_limit',
        'updated_at',
        'url',
        'webhook_id',
      ].sort(),
    );
    const after = await stored(id);
    expect(after).toMatchObject({ ...before, rate_limit: 25, updated_at: value.updated_at });
    expect(value.updated_at >= (before?.updated_at as string)).toBe(true);
    const audit = await auditRows(id);
    expect(audit.map((a) => a.action)).toEqual(['create', 'update']);
    expect(audit[1]).toMatchObject({ actor: app, actor_jti: 'j-9', request_id: 'req-patch-1' });
    const rowBefore = JSON.parse(audit[1]!.row_before);
    expect(rowBefore).toMatchObject({ description: 'first', rate_limit: null, event_types: ['NEW_NFT'] });
    // GET shows the same.
    const read = await expectValue<PortalWebhook>(await get(`webhook_id=${id}`, bearer(await tokenFor(app))));
    expect(read.value).toEqual(value);
  });

  it('sets every field at once, normalising the URL, and null clears event_types, rate_limit and description', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app, { rate_limit: 5, description: 'd' });
    await env.DB.prepare(`UPDATE webhooks SET failing_since = '2026-01-01T00:00:00.000Z' WHERE webhook_id = ?1`)
      .bind(Number(id))
      .run();
    const token = bearer(await tokenFor(app));
    const { value } = await expectValue<PortalWebhook>(
      await patch(
        {
          webhook_id: id,
          url: 'HTTPS://New.Example.COM:443/a/../b',
          event_types: ['MOD_NFT', 'NEW_NFT'],
          rate_limit: 1000,
          description: 'ü'.repeat(256),
        },
        token,
      ),
    );
    expect(value).toMatchObject({
      url: 'https://new.example.com/b',
      event_types: ['MOD_NFT', 'NEW_NFT'],
      rate_limit: 1000,
      description: 'ü'.repeat(256),
    });
    // A new URL is a new endpoint: its failures so far no longer count.
    expect(await stored(id)).toMatchObject({ url: 'https://new.example.com/b', failing_since: null });
    const cleared = await expectValue<PortalWebhook>(
      await patch({ webhook_id: id, event_types: null, rate_limit: null, description: null }, token),
    );
    expect(cleared.value).toMatchObject({ event_types: null, rate_limit: null, description: null });
    expect(await stored(id)).toMatchObject({ event_types: null, rate_limit: null, description: null });
    expect((await auditRows(id)).map((a) => a.action)).toEqual(['create', 'update', 'update']);
  });

  it('answers 200 with no record and no new updated_at when nothing changes (no field, or the same values)', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app, { description: 'same', rate_limit: 3 });
    const token = bearer(await tokenFor(app));
    const before = await snapshot();
    for (const body of [
      { webhook_id: id },
      { webhook_id: id, url: `https://${app}.example.com/hook`, description: 'same', rate_limit: 3, event_types: null },
      { webhook_id: id, url: `HTTPS://${app.toUpperCase()}.example.com/hook` },
    ]) {
      const { value } = await expectValue<PortalWebhook>(await patch(body, token));
      expect(value).toMatchObject({ webhook_id: Number(id), description: 'same', rate_limit: 3 });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('answers 409 for a URL another of the application webhooks has, and changes nothing', async () => {
    const app = freshApp();
    const a = await registerWebhook(app, { url: 'https://a.example.com/hook' });
    const b = await registerWebhook(app, { url: 'https://b.example.com/hook' });
    const token = bearer(await tokenFor(app));
    const before = await snapshot();
    const res = await patch({ webhook_id: b.id, url: 'https://A.example.com/hook', description: 'x' }, token);
    expect(res.headers.get('x-error-detail')).toBe('url is already registered for this application');
    expect(res.headers.get('x-d1-bookmark')).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
    await expectUpdateFail(res, 409);
    expect(await snapshot()).toEqual(before);
    // Another application's URL is no conflict.
    const other = freshApp();
    const c = await registerWebhook(other);
    await expectValue(
      await patch({ webhook_id: c.id, url: 'https://a.example.com/hook' }, bearer(await tokenFor(other))),
    );
    expect(a.id).not.toBe(b.id);
  });

  it('gives exactly one of two racing PATCHes a URL that is free', async () => {
    const app = freshApp();
    const a = await registerWebhook(app, { url: 'https://race-a.example.com/hook' });
    const b = await registerWebhook(app, { url: 'https://race-b.example.com/hook' });
    const token = bearer(await tokenFor(app));
    const results = await Promise.all(
      [a, b].map(({ id }) => patch({ webhook_id: id, url: 'https://race.example.com/hook' }, token)),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const { results: rows } = await env.DB.prepare(`SELECT url FROM webhooks WHERE app_id = ?1 ORDER BY url`)
      .bind(app)
      .all<{ url: string }>();
    expect(rows.filter((r) => r.url === 'https://race.example.com/hook')).toHaveLength(1);
  });

  it('answers 404 for a missing or foreign webhook, identically, and changes nothing', async () => {
    const owner = freshApp();
    const { id } = await registerWebhook(owner);
    const intruder = bearer(await tokenFor(freshApp()));
    const before = await snapshot();
    const foreign = await patch({ webhook_id: id, description: 'mine' }, intruder);
    const missing = await patch({ webhook_id: '999999999', description: 'mine' }, intruder);
    expect(foreign.headers.get('x-error-detail')).toBe(missing.headers.get('x-error-detail'));
    await expectUpdateFail(foreign, 404);
    await expectUpdateFail(missing, 404);
    expect(await snapshot()).toEqual(before);
  });

  it.each([
    ['a missing webhook_id', { description: 'x' }],
    ['a float webhook_id', { webhook_id: 1.5 }],
    ['a null url', { webhook_id: 1, url: null }],
    ['an http url', { webhook_id: 1, url: 'http://example.com/hook' }],
    ['a private url', { webhook_id: 1, url: 'https://10.0.0.1/hook' }],
    ['a url with a fragment', { webhook_id: 1, url: 'https://example.com/hook#x' }],
    ['empty event_types', { webhook_id: 1, event_types: [] }],
    ['repeated event_types', { webhook_id: 1, event_types: ['A', 'A'] }],
    ['a bad event type', { webhook_id: 1, event_types: ['no spaces'] }],
    ['rate_limit 0', { webhook_id: 1, rate_limit: 0 }],
    ['rate_limit 1001', { webhook_id: 1, rate_limit: 1001 }],
    ['rate_limit 2.5', { webhook_id: 1, rate_limit: 2.5 }],
    ['rate_limit as a string', { webhook_id: 1, rate_limit: '5' }],
    ['a 257-character description', { webhook_id: 1, description: 'x'.repeat(257) }],
    ['a number description', { webhook_id: 1, description: 5 }],
    ['a description of 200 lone surrogates', { webhook_id: 1, description: '\ud800'.repeat(200) }],
    ['a url with a lone surrogate', { webhook_id: 1, url: 'https://example.com/\udfff' }],
    ['an array body', [1]],
  ])('answers 400 for %s and changes nothing', async (_name, body) => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const withId =
      Array.isArray(body) || !('webhook_id' in body)
        ? body
        : { ...body, webhook_id: body.webhook_id === 1 ? id : body.webhook_id };
    const before = await snapshot();
    const res = await patch(withId, bearer(await tokenFor(app)));
    expect(res.headers.get('x-error-detail')).toBeTruthy();
    await expectUpdateFail(res, 400);
    expect(await snapshot()).toEqual(before);
  });

  it('answers 415 for another media type and 413 for a large body, as PUT, before storage', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const token = bearer(await tokenFor(app));
    const before = await snapshot();
    await expectUpdateFail(await patch({ webhook_id: id, description: 'x' }, token, 'text/plain'), 415);
    await expectUpdateFail(await patch({ webhook_id: id, description: 'x'.repeat(17000) }, token), 413);
    expect(await snapshot()).toEqual(before);
  });

  it('answers 401 (20004) before looking at the body', async () => {
    await expectEnvelope(await patch('not json', {}), 401, 20004, 'Invalid jwt token');
  });

  it('uses one D1 round trip, and none for input it rejects', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const token = bearer(await tokenFor(app));
    const counted = countingDb(env.DB);
    await expectValue(await fetchWith({ DB: counted.db }, patchRequest({ webhook_id: id, description: 'one' }, token)));
    expect(counted.calls()).toBe(1);
    const rejected = countingDb(env.DB);
    await expectUpdateFail(
      await fetchWith({ DB: rejected.db }, patchRequest({ webhook_id: id, rate_limit: 0 }, token)),
      400,
    );
    expect(rejected.calls()).toBe(0);
  });

  it('is safe to retry: the store called twice records one change', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const actor = { appId: app, jti: null, requestId: 'r-retry' };
    const first = await patchWebhook(env.DB, id, { description: 'retried' }, actor);
    const second = await patchWebhook(env.DB, id, { description: 'retried' }, actor);
    expect(first).toMatchObject({ outcome: 'patched', changed: true });
    expect(second).toMatchObject({ outcome: 'patched', changed: false });
    expect((await auditRows(id)).map((a) => a.action)).toEqual(['create', 'update']);
  });

  it('answers 405 with the path Allow, now with PATCH', async () => {
    const res = await SELF.fetch(URL_, { method: 'OPTIONS' });
    expect(res.headers.get('allow')).toBe('DELETE, GET, PATCH, POST, PUT');
    await expectEnvelope(res, 405, 405, 'method not allowed');
  });
});

describe('description and rate_limit on every webhook object', () => {
  it('POST sets them, its replay shows them, GET one and the list show them; older webhooks show null', async () => {
    const app = freshApp();
    const token = await tokenFor(app);
    const body = { url: `https://${app}.example.com/x`, description: 'Orders', rate_limit: 7 };
    const created = await expectValue<PortalWebhook>(
      await post(body, { ...bearer(token), 'idempotency-key': 'k1' }),
      201,
    );
    expect(created.value).toMatchObject({ description: 'Orders', rate_limit: 7 });
    const replay = await expectValue<PortalWebhook>(
      await post(body, { ...bearer(token), 'idempotency-key': 'k1' }),
      201,
    );
    expect(replay.value).toEqual(created.value);
    const legacy = await insertWebhook(app, { url: 'https://legacy.example.com/' });
    const list = await expectValue<{ webhooks: PortalWebhook[] }>(await get(null, bearer(token)));
    expect(list.value.webhooks.map((w) => [w.description, w.rate_limit])).toEqual([
      ['Orders', 7],
      [null, null],
    ]);
    const one = await expectValue<PortalWebhook>(await get(`webhook_id=${legacy}`, bearer(token)));
    expect(one.value).toMatchObject({ description: null, rate_limit: null });
    const { row_before } = (await auditRows(String(created.value.webhook_id)))[0]!;
    expect(JSON.parse(row_before)).toMatchObject({ description: 'Orders', rate_limit: 7 });
  });

  it.each([
    ['rate_limit 0', { rate_limit: 0 }],
    ['rate_limit 1001', { rate_limit: 1001 }],
    ['a long description', { description: 'x'.repeat(257) }],
    ['a description that is not a string', { description: ['x'] }],
  ])('POST answers 400 for %s and stores nothing', async (_name, extra) => {
    const app = freshApp();
    const before = await snapshot();
    const res = await post({ url: `https://${app}.example.com/x`, ...extra }, bearer(await tokenFor(app)));
    await expectEnvelope(res, 400, 64061, 'create fail');
    expect(await snapshot()).toEqual(before);
  });
});
