import { createScheduledController, env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import worker from '../src/index';
import { auditRows, countingDb, insertWebhook, snapshot } from './helpers/database';
import { expectCreateFail, expectEnvelope, expectSecretFail, expectValue, SECRET } from './helpers/replies';
import { fetchAndWait, fetchWith, post, postRequest, SECRET_URL, secretRequest } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const readSecret = (query: string, headers: Record<string, string>, overrides: Record<string, unknown> = {}) =>
  fetchAndWait(overrides, secretRequest(query, headers));

describe('POST /v1.0/app/nft/webhook: event_types and the signing secret', () => {
  it('registers event_types and shows them in every reply that shows the webhook', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const { value } = await expectValue<{ webhook_id: number; event_types: string[] }>(
      await post({ url: 'https://types.example.com/h', event_types: ['NEW_NFT', 'webhook.test'] }, headers),
      201,
    );
    expect(value.event_types).toEqual(['NEW_NFT', 'webhook.test']);
    const one = await expectValue<{ event_types: string[] }>(
      await fetchWith(
        {},
        new Request(`https://webhooks.test/v1.0/app/nft/webhook?webhook_id=${value.webhook_id}`, { headers }),
      ),
    );
    expect(one.value.event_types).toEqual(['NEW_NFT', 'webhook.test']);
    const nulled = await expectValue<{ event_types: null }>(
      await post({ url: 'https://types.example.com/all', event_types: null }, headers),
      201,
    );
    expect(nulled.value.event_types).toBeNull();
  });

  it.each([
    ['an empty list', []],
    ['51 types', Array.from({ length: 51 }, (_, i) => `T${i}`)],
    ['a repeated type', ['NEW_NFT', 'NEW_NFT']],
    ['a type that is not a string', ['NEW_NFT', 7]],
    ['a type with a space', ['NEW NFT']],
    ['a string instead of a list', 'NEW_NFT'],
    ['an object', { NEW_NFT: true }],
  ])('answers 400 for event_types that is %s, and registers nothing', async (_, eventTypes) => {
    const before = await snapshot();
    const res = await post(
      { url: 'https://types.example.com/bad', event_types: eventTypes },
      bearer(await tokenFor(freshApp())),
    );
    expect(res.headers.get('x-error-detail')).toBe('event_types must be null or 1 to 50 distinct event types');
    await expectCreateFail(res, 400);
    expect(await snapshot()).toEqual(before);
  });

  it('accepts 50 distinct types', async () => {
    const types = Array.from({ length: 50 }, (_, i) => `T.${i}`);
    const { value } = await expectValue<{ event_types: string[] }>(
      await post({ url: 'https://types.example.com/fifty', event_types: types }, bearer(await tokenFor(freshApp()))),
      201,
    );
    expect(value.event_types).toEqual(types);
  });

  it('keeps the secret encrypted: neither the row, the audit record nor the log holds it', async () => {
    const info = vi.spyOn(console, 'info');
    const app = freshApp();
    const { value } = await expectValue<{ webhook_id: number; secret: string }>(
      await post({ url: 'https://sealed.example.com/h' }, bearer(await tokenFor(app))),
      201,
    );
    expect(value.secret).toMatch(SECRET);
    const key = value.secret.slice('whsec_'.length);
    const everything = JSON.stringify(await snapshot());
    expect(everything).not.toContain(key);
    expect(everything).not.toContain(key.slice(0, 16));
    const row = await env.DB.prepare('SELECT secret FROM webhooks WHERE webhook_id = ?1')
      .bind(value.webhook_id)
      .first<{ secret: string }>();
    expect(row!.secret).toMatch(/^v1\.[A-Za-z0-9+/]+=*$/);
    const [record] = await auditRows(String(value.webhook_id));
    expect(Object.keys(JSON.parse(record!.row_before))).not.toContain('secret');
    expect(JSON.stringify(record)).not.toContain(row!.secret);
    expect(JSON.stringify(info.mock.calls)).not.toContain(key);
    // Every webhook gets its own.
    const other = await expectValue<{ secret: string }>(
      await post({ url: 'https://sealed.example.com/h2' }, bearer(await tokenFor(app))),
      201,
    );
    expect(other.value.secret).not.toBe(value.secret);
  });

  it('replays the secret with the first reply under the same Idempotency-Key', async () => {
    const headers = { ...bearer(await tokenFor(freshApp())), 'idempotency-key': 'secret-replay' };
    const first = await post({ url: 'https://replay.example.com/h' }, headers);
    const firstText = await first.text();
    const again = await post({ url: 'https://replay.example.com/h' }, headers);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);
    expect(JSON.parse(firstText).value.secret).toMatch(SECRET);
  });

  it('fails closed without WEBHOOK_SECRET_KEY: 500, nothing registered, the log names the setting', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    for (const key of ['', 'too-short', undefined]) {
      const before = await snapshot();
      const res = await fetchWith(
        { WEBHOOK_SECRET_KEY: key },
        postRequest({ url: 'https://nokey.example.com/h' }, bearer(await tokenFor(freshApp()))),
      );
      await expectCreateFail(res, 500);
      expect(await snapshot()).toEqual(before);
    }
    const lines = error.mock.calls.map((c) => JSON.parse(String(c[0])));
    expect(lines.every((l) => l.msg.startsWith('configuration error: WEBHOOK_SECRET_KEY'))).toBe(true);
  });
});

describe('GET /v1.0/app/nft/webhook/secret', () => {
  it('answers the secret that the registration showed, in one D1 round trip with a bookmark', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const created = await expectValue<{ webhook_id: number; secret: string }>(
      await post({ url: 'https://read.example.com/h' }, headers),
      201,
    );
    const { db, calls } = countingDb(env.DB);
    const res = await readSecret(`webhook_id=${created.value.webhook_id}`, headers, { DB: db });
    const { value, text } = await expectValue<{ secret: string }>(res);
    expect(value).toEqual({ secret: created.value.secret });
    expect(text).toBe(`{"return":0,"message":"success","value":{"secret":"${created.value.secret}"}}`);
    expect(calls()).toBe(1);
  });

  it('answers a missing, a deleted and a foreign webhook with one identical 404', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const foreign = await insertWebhook(freshApp());
    const replies = [];
    for (const id of [foreign, '999999999', '9223372036854775807']) {
      const res = await readSecret(`webhook_id=${id}`, headers);
      replies.push([res.status, res.headers.get('x-error-detail'), await res.clone().text()]);
      await expectSecretFail(res, 404);
    }
    expect(new Set(replies.map((r) => JSON.stringify(r))).size).toBe(1);
    // The foreign webhook was not given a secret either.
    expect(
      await env.DB.prepare('SELECT secret FROM webhooks WHERE webhook_id = ?1').bind(foreign).first('secret'),
    ).toBeNull();
  });

  it('answers 400 for a bad webhook_id and 401 for a bad token before anything else', async () => {
    const headers = bearer(await tokenFor(freshApp()));
    for (const query of ['', 'webhook_id=', 'webhook_id=0', 'webhook_id=1&webhook_id=2', 'webhook_id=-1']) {
      await expectSecretFail(await readSecret(query, headers), 400);
    }
    await expectEnvelope(await readSecret('webhook_id=x', bearer('nope')), 401, 20004, 'Invalid jwt token');
  });

  it('gives a webhook registered before secrets existed one secret, the same to racing readers', async () => {
    const app = freshApp();
    const legacy = await insertWebhook(app, { url: 'https://legacy.example.com/h' });
    const headers = bearer(await tokenFor(app));
    const replies = await Promise.all(Array.from({ length: 8 }, () => readSecret(`webhook_id=${legacy}`, headers)));
    const secrets = await Promise.all(
      replies.map(async (r) => (await expectValue<{ secret: string }>(r)).value.secret),
    );
    expect(new Set(secrets).size).toBe(1);
    expect(secrets[0]).toMatch(SECRET);
    const stored = await env.DB.prepare('SELECT secret FROM webhooks WHERE webhook_id = ?1')
      .bind(legacy)
      .first<{ secret: string }>();
    expect(stored!.secret).toMatch(/^v1\./);
    expect(stored!.secret).not.toContain(secrets[0]!.slice(6, 30));
  });

  it('fails closed with 500 when WEBHOOK_SECRET_KEY is missing or cannot open the stored secret', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const { value } = await expectValue<{ webhook_id: number }>(
      await post({ url: 'https://key.example.com/h' }, headers),
      201,
    );
    await expectSecretFail(
      await readSecret(`webhook_id=${value.webhook_id}`, headers, { WEBHOOK_SECRET_KEY: '' }),
      500,
    );
    const otherKey = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));
    await expectSecretFail(
      await readSecret(`webhook_id=${value.webhook_id}`, headers, { WEBHOOK_SECRET_KEY: otherKey }),
      500,
    );
    expect(error.mock.calls.some((c) => String(c[0]).includes('WEBHOOK_SECRET_KEY'))).toBe(true);
  });

  it('answers 405 with Allow: GET, POST for other methods', async () => {
    const res = await fetchWith({}, new Request(SECRET_URL, { method: 'DELETE' }));
    expect(res.headers.get('allow')).toBe('GET, POST');
    await expectEnvelope(res, 405, 405, 'method not allowed');
  });
});

describe('the Cron Trigger', () => {
  it('logs a job that fails, and does not throw: the next run tries again', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const boom = async () => Promise.reject(new Error('D1_ERROR: no such table: idempotency_keys'));
    const failing = { prepare: () => ({ bind: () => ({ all: boom, first: boom, run: boom }) }), batch: boom };
    await worker.scheduled(createScheduledController({ cron: '* * * * *' }), {
      ...env,
      DB: failing,
      // Invalid delivery settings do not concern the Cron: it has no delivery job.
      DELIVERY_RETENTION_DAYS: 'x',
    } as unknown as CloudflareBindings);
    // Each job that reads D1 fails and says so; none stops the others.
    expect(error.mock.calls.map((c) => JSON.parse(String(c[0])).msg)).toEqual([
      'cron: expired idempotency keys purged failed',
      'cron: erasures finished failed',
    ]);
  });
});
