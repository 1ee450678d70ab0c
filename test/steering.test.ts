import { env } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { recoverDeliveries } from '../src/deliveries/store';
import {
  auditRows,
  bearer,
  consume,
  countingDb,
  DELIVERIES_QUEUE,
  deliver,
  expectEnvelope,
  expectValue,
  fakeQueue,
  fetchAndWait,
  insertWebhook,
  ORIGIN,
  publishEvent,
  put,
  receiver,
  registerWebhook,
  tokenFor,
} from './helpers';

afterEach(() => {
  vi.restoreAllMocks();
});

let seq = 0;
const freshApp = () => `steering-app-${++seq}`;
const LOG_URL = `${ORIGIN}/v1.0/app/nft/webhook/delivery`;
const expectQueryFail = (res: Response, status: number) => expectEnvelope(res, status, 64060, 'query fail');
const expectEventFail = (res: Response, status: number) => expectEnvelope(res, status, 64064, 'event fail');
const expectSecretFail = (res: Response, status: number) => expectEnvelope(res, status, 64065, 'secret fail');

const register = registerWebhook;
const publish = async (app: string, type = 'NEW_NFT') => (await publishEvent(app, type, {})).deliveryIds;

const readLog = (query: string, headers: Record<string, string>, overrides: Record<string, unknown> = {}) =>
  fetchAndWait(overrides, new Request(`${LOG_URL}?${query}`, { headers }));

const postJson = (
  path: string,
  body: unknown,
  headers: Record<string, string>,
  overrides: Record<string, unknown> = {},
) => {
  const queue = fakeQueue();
  return fetchAndWait(
    { DELIVERIES: queue.binding, ...overrides },
    new Request(`${ORIGIN}/v1.0/app/nft/webhook/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  ).then((res) => ({ res, sent: queue.sent as { delivery_id: string }[] }));
};

interface Delivery {
  delivery_id: number;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  attempt_log?: {
    attempt: number;
    attempted_at: string;
    status: number | null;
    error: string | null;
    duration_ms: number;
    body: string | null;
  }[];
}
type Page = { deliveries: Delivery[]; next_cursor: string | null };

describe('GET /v1.0/app/nft/webhook/delivery', () => {
  it('lists a webhook’s deliveries newest first, with the latest attempt of each', async () => {
    const app = freshApp();
    const hook = await register(app);
    const first = await publish(app, 'NEW_NFT');
    const second = await publish(app, 'MOD_NFT');
    receiver(() => new Response('busy', { status: 503 }));
    await deliver(first);
    const headers = bearer(await tokenFor(app));
    const { value } = await expectValue<Page>(await readLog(`webhook_id=${hook.id}`, headers));
    expect(value.next_cursor).toBeNull();
    expect(value.deliveries.map((d) => d.delivery_id)).toEqual([Number(second[0]), Number(first[0])]);
    expect(value.deliveries[0]).toEqual({
      delivery_id: Number(second[0]),
      event_id: expect.stringMatching(/^evt_/),
      type: 'MOD_NFT',
      status: 'pending',
      attempts: 0,
      next_attempt_at: expect.any(String),
      last_attempt_at: null,
      last_status: null,
      last_error: null,
      created_at: expect.any(String),
    });
    expect(value.deliveries[1]).toMatchObject({
      type: 'NEW_NFT',
      status: 'pending',
      attempts: 1,
      last_status: 503,
      last_error: null,
    });
  });

  it('pages with a cursor that neither repeats nor skips while deliveries are added, and filters by status', async () => {
    const app = freshApp();
    const hook = await register(app);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(...(await publish(app)));
    const headers = bearer(await tokenFor(app));
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `webhook_id=${hook.id}&limit=2${cursor === null ? '' : `&cursor=${cursor}`}`;
      const { value }: { value: Page } = await expectValue<Page>(await readLog(query, headers));
      seen.push(...value.deliveries.map((d) => d.delivery_id));
      cursor = value.next_cursor;
      // Newer deliveries arrive between pages: they belong before the first page, not in the rest.
      await publish(app);
    } while (cursor !== null);
    expect(seen).toEqual([...made].reverse().map(Number));

    receiver();
    await deliver(made.slice(0, 2));
    const ok = await expectValue<Page>(await readLog(`webhook_id=${hook.id}&status=succeeded`, headers));
    expect(ok.value.deliveries.map((d) => d.delivery_id).sort()).toEqual(made.slice(0, 2).map(Number).sort());
  });

  it('answers one delivery with its attempt log, oldest first', async () => {
    const app = freshApp();
    await register(app);
    const [id] = await publish(app);
    receiver((_, n) => (n === 1 ? new Response('down', { status: 500 }) : new Response('fine')));
    await deliver([id!]);
    await env.DB.prepare(
      `UPDATE deliveries SET next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE delivery_id = ?1`,
    )
      .bind(id)
      .run();
    await deliver([id!]);
    const { value } = await expectValue<Delivery>(await readLog(`delivery_id=${id}`, bearer(await tokenFor(app))));
    expect(value).toMatchObject({
      delivery_id: Number(id),
      status: 'succeeded',
      attempts: 2,
      last_status: 200,
      next_attempt_at: null,
    });
    expect(value.attempt_log).toEqual([
      {
        attempt: 1,
        attempted_at: expect.any(String),
        status: 500,
        error: null,
        duration_ms: expect.any(Number),
        body: 'down',
      },
      {
        attempt: 2,
        attempted_at: expect.any(String),
        status: 200,
        error: null,
        duration_ms: expect.any(Number),
        body: 'fine',
      },
    ]);
  });

  it('answers a foreign and a missing webhook or delivery with one identical 404', async () => {
    const app = freshApp();
    const other = freshApp();
    const theirs = await register(other);
    const [theirDelivery] = await publish(other);
    const headers = bearer(await tokenFor(app));
    for (const [foreign, missing] of [
      [`webhook_id=${theirs.id}`, 'webhook_id=999999999'],
      [`delivery_id=${theirDelivery}`, 'delivery_id=999999999'],
    ]) {
      const a = await readLog(foreign!, headers);
      const b = await readLog(missing!, headers);
      expect(a.headers.get('x-error-detail')).toBe(b.headers.get('x-error-detail'));
      await expectQueryFail(a, 404);
      await expectQueryFail(b, 404);
    }
  });

  it.each([
    ['', 'webhook_id or delivery_id is required'],
    ['webhook_id=0', undefined],
    ['webhook_id=1&limit=0', 'limit must be a whole number from 1 to 100'],
    ['webhook_id=1&limit=101', 'limit must be a whole number from 1 to 100'],
    ['webhook_id=1&status=done', 'status must be one of pending, succeeded, failed, cancelled'],
    ['webhook_id=1&status=failed&status=pending', 'status must be given once'],
    ['webhook_id=1&cursor=nope', 'cursor is not a next_cursor this API issued'],
    // A cursor of the webhook list is not one of the delivery log.
    ['webhook_id=1&cursor=dzE6Mg', 'cursor is not a next_cursor this API issued'],
    ['delivery_id=abc', undefined],
    ['delivery_id=1&delivery_id=2', 'delivery_id must be given once'],
  ])('answers 400 for ?%s', async (query, detail) => {
    const res = await readLog(query, bearer(await tokenFor(freshApp())));
    if (detail !== undefined) expect(res.headers.get('x-error-detail')).toBe(detail);
    await expectQueryFail(res, 400);
  });

  it('is one D1 round trip, sends X-D1-Bookmark, and refuses a malformed bookmark', async () => {
    const app = freshApp();
    const hook = await register(app);
    const headers = bearer(await tokenFor(app));
    const { db, calls } = countingDb(env.DB);
    const res = await readLog(`webhook_id=${hook.id}`, headers, { DB: db });
    await expectValue(res);
    expect(calls()).toBe(1);
    const bookmark = res.headers.get('x-d1-bookmark')!;
    await expectValue(await readLog(`webhook_id=${hook.id}`, { ...headers, 'x-d1-bookmark': bookmark }));
    await expectQueryFail(
      await readLog(`webhook_id=${hook.id}`, { ...headers, 'x-d1-bookmark': 'first-primary' }),
      400,
    );
  });
});

describe('POST /v1.0/app/nft/webhook/test', () => {
  it('sends one signed test event to that webhook only, whatever its event_types', async () => {
    const app = freshApp();
    const hook = await register(app, { event_types: ['MOD_NFT'] });
    const other = await register(app, { url: `https://${app}.example.com/other` });
    const { res, sent } = await postJson('test', { webhook_id: hook.id }, bearer(await tokenFor(app)));
    const { value } = await expectValue<{ event_id: string; delivery_id: number }>(res, 202);
    expect(Object.keys(value)).toEqual(['event_id', 'delivery_id']);
    expect(sent).toEqual([{ delivery_id: String(value.delivery_id) }]);
    const rows = await env.DB.prepare('SELECT CAST(webhook_id AS TEXT) AS w FROM deliveries WHERE event_id = ?1')
      .bind(value.event_id)
      .all();
    expect(rows.results).toEqual([{ w: hook.id }]);
    expect(other.id).not.toBe(hook.id);

    const { requests } = receiver();
    await deliver([String(value.delivery_id)]);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.headers['webhook-id']).toBe(value.event_id);
    expect(new StandardWebhook(hook.secret).verify(requests[0]!.body, requests[0]!.headers)).toEqual({
      type: 'webhook.test',
      timestamp: expect.any(String),
      data: {},
    });
  });

  it('takes another type, as a JSON integer or a decimal string id', async () => {
    const app = freshApp();
    const hook = await register(app);
    const { res } = await postJson(
      'test',
      `{"webhook_id": ${hook.id}, "type": "NEW_NFT"}`,
      bearer(await tokenFor(app)),
    );
    const { value } = await expectValue<{ event_id: string }>(res, 202);
    expect(await env.DB.prepare('SELECT type FROM events WHERE event_id = ?1').bind(value.event_id).first('type')).toBe(
      'NEW_NFT',
    );
  });

  it('answers 409 for a disabled webhook, 404 for a foreign one, 400 for bad input; nothing stored', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const off = await register(app, { is_enabled: false });
    const foreign = await insertWebhook(freshApp());
    const count = () => env.DB.prepare('SELECT COUNT(*) AS n FROM events').first('n');
    const before = await count();
    await expectEventFail((await postJson('test', { webhook_id: off.id }, headers)).res, 409);
    await expectEventFail((await postJson('test', { webhook_id: foreign }, headers)).res, 404);
    await expectEventFail((await postJson('test', { webhook_id: off.id, type: 'bad type' }, headers)).res, 400);
    await expectEventFail((await postJson('test', { webhook_id: 1.5 }, headers)).res, 400);
    await expectEventFail((await postJson('test', {}, headers)).res, 400);
    expect(await count()).toBe(before);
  });
});

describe('an invalid delivery setting', () => {
  it.each([
    ['DELIVERY_RETRY_SCHEDULE', '2s 13h'],
    ['DELIVERY_RETENTION_DAYS', '0'],
  ])('%s=%s: test events and recover both answer 500 naming it, storing and queueing nothing', async (name, bad) => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    const hook = await register(app);
    const headers = bearer(await tokenFor(app));
    const events = () => env.DB.prepare('SELECT COUNT(*) AS n FROM events WHERE app_id = ?1').bind(app).first('n');
    const since = new Date(Date.now() - 3_600_000).toISOString();
    for (const [path, body] of [
      ['test', { webhook_id: hook.id }],
      ['recover', { webhook_id: hook.id, since }],
    ] as const) {
      error.mockClear();
      const { res, sent } = await postJson(path, body, headers, { [name]: bad });
      await expectEventFail(res, 500);
      expect(sent, path).toEqual([]);
      expect(error.mock.calls.map((c) => String(c[0])).join('\n'), path).toContain(`configuration error: ${name}: `);
    }
    expect(await events()).toBe(0);
  });
});

describe('POST /v1.0/app/nft/webhook/secret: rotation', () => {
  it('signs with the new and the previous secret for 24 hours, new first, then with the new one only', async () => {
    const app = freshApp();
    const hook = await register(app);
    const headers = bearer(await tokenFor(app));
    const rotated = await postJson('secret', { webhook_id: hook.id }, headers);
    const { value } = await expectValue<{ secret: string }>(rotated.res);
    expect(value.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(value.secret).not.toBe(hook.secret);
    const read = await expectValue<{ secret: string }>(
      await fetchAndWait({}, new Request(`${ORIGIN}/v1.0/app/nft/webhook/secret?webhook_id=${hook.id}`, { headers })),
    );
    expect(read.value.secret).toBe(value.secret);

    const { requests } = receiver();
    await deliver(await publish(app));
    const [req] = requests;
    const signatures = req!.headers['webhook-signature']!.split(' ');
    expect(signatures).toHaveLength(2);
    // A receiver that still holds the old secret verifies every request, and so does one with the new.
    expect(new StandardWebhook(hook.secret).verify(req!.body, req!.headers)).toBeTruthy();
    expect(new StandardWebhook(value.secret).verify(req!.body, req!.headers)).toBeTruthy();
    // New first.
    expect(
      new StandardWebhook(value.secret).verify(req!.body, { ...req!.headers, 'webhook-signature': signatures[0]! }),
    ).toBeTruthy();

    await env.DB.prepare(`UPDATE webhooks SET previous_secret_until = ?2 WHERE webhook_id = ?1`)
      .bind(hook.id, new Date(Date.now() - 1000).toISOString())
      .run();
    await deliver(await publish(app));
    const late = requests[1]!;
    expect(late.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(() => new StandardWebhook(hook.secret).verify(late.body, late.headers)).toThrow();
    expect(new StandardWebhook(value.secret).verify(late.body, late.headers)).toBeTruthy();
  });

  it('records the rotation in the audit table without any secret', async () => {
    const app = freshApp();
    const hook = await register(app);
    const { res } = await postJson(
      'secret',
      { webhook_id: hook.id },
      { ...bearer(await tokenFor(app, { jti: 'rot-1' })), 'x-request-id': 'rotate-1' },
    );
    const { value } = await expectValue<{ secret: string }>(res);
    const audit = await auditRows(hook.id);
    expect(audit.map((a) => [a.action, a.actor, a.actor_jti, a.request_id])).toEqual([
      ['create', app, null, expect.any(String)],
      ['rotate_secret', app, 'rot-1', 'rotate-1'],
    ]);
    const text = JSON.stringify(audit);
    for (const secret of [hook.secret, value.secret]) expect(text).not.toContain(secret.slice(6, 30));
    expect(Object.keys(JSON.parse(audit[1]!.row_before))).not.toContain('secret');
  });

  it('leaves racing rotations coherent: the secret each names signs', async () => {
    const app = freshApp();
    const hook = await register(app);
    const headers = bearer(await tokenFor(app));
    const replies = await Promise.all([1, 2].map(() => postJson('secret', { webhook_id: hook.id }, headers)));
    const secrets = await Promise.all(
      replies.map(async ({ res }) => (await expectValue<{ secret: string }>(res)).value.secret),
    );
    const { requests } = receiver();
    await deliver(await publish(app));
    for (const secret of secrets)
      expect(new StandardWebhook(secret).verify(requests[0]!.body, requests[0]!.headers)).toBeTruthy();
    expect((await auditRows(hook.id)).filter((a) => a.action === 'rotate_secret')).toHaveLength(2);
  });

  it('answers 404 for a foreign webhook and 400 for bad input, with the secret code', async () => {
    const headers = bearer(await tokenFor(freshApp()));
    const foreign = await insertWebhook(freshApp());
    await expectSecretFail((await postJson('secret', { webhook_id: foreign }, headers)).res, 404);
    await expectSecretFail((await postJson('secret', { webhook_id: 'x' }, headers)).res, 400);
    await expectSecretFail((await postJson('secret', '[', headers)).res, 400);
    expect(
      await env.DB.prepare('SELECT secret FROM webhooks WHERE webhook_id = ?1').bind(foreign).first('secret'),
    ).toBeNull();
  });
});

describe('POST /v1.0/app/nft/webhook/recover', () => {
  /** Makes these deliveries failed, as if created `minutesAgo` ago after `attempts` attempts. */
  const fail = (ids: string[], minutesAgo: number, attempts = 8) =>
    env.DB.prepare(
      `UPDATE deliveries SET status = 'failed', attempts = ?2, next_attempt_at = NULL, created_at = ?3
       WHERE delivery_id IN (SELECT value FROM json_each(?1))`,
    )
      .bind(JSON.stringify(ids.map(Number)), attempts, new Date(Date.now() - minutesAgo * 60_000).toISOString())
      .run();
  const ago = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

  it('attempts the failed deliveries of the window again, on a fresh schedule, and counts them', async () => {
    const app = freshApp();
    const hook = await register(app);
    const old = await publish(app);
    const inside = [...(await publish(app)), ...(await publish(app))];
    const recent = await publish(app);
    const pending = await publish(app);
    await fail(old, 120);
    await fail(inside, 60);
    await fail(recent, 10);
    const { res, sent } = await postJson(
      'recover',
      { webhook_id: hook.id, since: ago(90), until: ago(30) },
      bearer(await tokenFor(app)),
    );
    const { value } = await expectValue<{ deliveries: number }>(res, 202);
    expect(value).toEqual({ deliveries: 2 });
    // In a new queue generation: any old message of theirs is dropped.
    expect(sent.sort((a, b) => Number(a.delivery_id) - Number(b.delivery_id))).toEqual(
      inside.map((delivery_id) => ({ delivery_id, gen: 1 })),
    );
    const states = await env.DB.prepare(
      'SELECT CAST(delivery_id AS TEXT) AS id, status, attempts, schedule_start FROM deliveries WHERE webhook_id = ?1 ORDER BY delivery_id',
    )
      .bind(hook.id)
      .all();
    expect(states.results).toEqual([
      { id: old[0], status: 'failed', attempts: 8, schedule_start: 0 },
      { id: inside[0], status: 'pending', attempts: 8, schedule_start: 8 },
      { id: inside[1], status: 'pending', attempts: 8, schedule_start: 8 },
      { id: recent[0], status: 'failed', attempts: 8, schedule_start: 0 },
      { id: pending[0], status: 'pending', attempts: 0, schedule_start: 0 },
    ]);
    // Attempts keep counting; the schedule starts again from its first delay.
    receiver(() => new Response(null, { status: 500 }));
    const { retries } = await consume(DELIVERIES_QUEUE, [{ delivery_id: inside[0], gen: 1 }]);
    expect(Object.values(retries)).toEqual([5]);
    expect(
      await env.DB.prepare('SELECT attempts FROM deliveries WHERE delivery_id = ?1').bind(inside[0]).first('attempts'),
    ).toBe(9);
  });

  it('takes [since, until): a delivery created at since is in, one at until is out; until defaults to now', async () => {
    const app = freshApp();
    const hook = await register(app);
    const [a] = await publish(app);
    const [b] = await publish(app);
    await fail([a!], 60);
    await fail([b!], 30);
    const at = (id: string) =>
      env.DB.prepare('SELECT created_at FROM deliveries WHERE delivery_id = ?1').bind(id).first<string>('created_at');
    const headers = bearer(await tokenFor(app));
    const first = await postJson('recover', { webhook_id: hook.id, since: await at(a!), until: await at(b!) }, headers);
    expect((await expectValue<{ deliveries: number }>(first.res, 202)).value).toEqual({ deliveries: 1 });
    expect(first.sent).toEqual([{ delivery_id: a, gen: 1 }]);
    const rest = await postJson('recover', { webhook_id: hook.id, since: ago(120) }, headers);
    expect((await expectValue<{ deliveries: number }>(rest.res, 202)).value).toEqual({ deliveries: 1 });
    expect(rest.sent).toEqual([{ delivery_id: b, gen: 1 }]);
  });

  it('never queues a delivery twice when recoveries race', async () => {
    const app = freshApp();
    const hook = await register(app);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(...(await publish(app)));
    await fail(ids, 30);
    const headers = bearer(await tokenFor(app));
    const replies = await Promise.all(
      [1, 2, 3].map(() => postJson('recover', { webhook_id: hook.id, since: ago(60) }, headers)),
    );
    const counts = await Promise.all(
      replies.map(async ({ res }) => (await expectValue<{ deliveries: number }>(res, 202)).value.deliveries),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(6);
    expect(replies.flatMap((r) => r.sent.map((m) => m.delivery_id)).sort()).toEqual([...ids].sort());
  });

  it.each([
    [{ since: 'yesterday' }, 'since must be an ISO 8601 date and time with a time zone'],
    [{ since: '2026-11-23T10:00:00' }, 'since must be an ISO 8601 date and time with a time zone'],
    [{}, 'since is required'],
    [{ since: 'FUTURE' }, 'since must not be in the future'],
    [{ since: 'TOO_OLD' }, 'since must be within the last 30 days (DELIVERY_RETENTION_DAYS)'],
    [{ since: 'HOUR_AGO', until: 'HOUR_AGO' }, 'until must be after since'],
    [{ since: 'HOUR_AGO', until: 'TOO_OLD' }, 'until must be after since'],
    [{ since: 'HOUR_AGO', until: 5 }, 'until must be an ISO 8601 date and time with a time zone'],
  ])('answers 400 for %j', async (window, detail) => {
    const app = freshApp();
    const hook = await register(app);
    const times: Record<string, string> = {
      FUTURE: new Date(Date.now() + 3_600_000).toISOString(),
      TOO_OLD: new Date(Date.now() - 31 * 86_400_000).toISOString(),
      HOUR_AGO: ago(60),
    };
    const body = Object.fromEntries(
      Object.entries(window).map(([k, v]) => [k, typeof v === 'string' ? (times[v] ?? v) : v]),
    );
    const { res, sent } = await postJson('recover', { webhook_id: hook.id, ...body }, bearer(await tokenFor(app)));
    expect(res.headers.get('x-error-detail')).toBe(detail);
    await expectEventFail(res, 400);
    expect(sent).toEqual([]);
  });

  it('answers 409 for a disabled webhook and 404 for a foreign one, recovering nothing', async () => {
    const app = freshApp();
    const hook = await register(app);
    const ids = await publish(app);
    await fail(ids, 30);
    const headers = bearer(await tokenFor(app));
    await put({ webhook_id: hook.id, is_enabled: false }, headers);
    await expectEventFail((await postJson('recover', { webhook_id: hook.id, since: ago(60) }, headers)).res, 409);
    const other = bearer(await tokenFor(freshApp()));
    await expectEventFail((await postJson('recover', { webhook_id: hook.id, since: ago(60) }, other)).res, 404);
    expect(
      await env.DB.prepare('SELECT status FROM deliveries WHERE delivery_id = ?1').bind(ids[0]).first('status'),
    ).toBe('failed');
  });
});

describe('the steering paths', () => {
  it.each([
    ['delivery', 'GET'],
    ['test', 'POST'],
    ['recover', 'POST'],
  ])('/v1.0/app/nft/webhook/%s answers other methods 405 with Allow: %s', async (path, allow) => {
    const res = await fetchAndWait({}, new Request(`${ORIGIN}/v1.0/app/nft/webhook/${path}`, { method: 'PATCH' }));
    expect(res.headers.get('allow')).toBe(allow);
    await expectEnvelope(res, 405, 405, 'method not allowed');
  });

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

describe('recoverDeliveries (the store)', () => {
  it('finds what it recovered when its batch runs again after committing', async () => {
    const app = freshApp();
    const hook = await register(app);
    const ids = await publish(app);
    await env.DB.prepare(
      `UPDATE deliveries SET status = 'failed', attempts = 3, next_attempt_at = NULL WHERE delivery_id = ?1`,
    )
      .bind(ids[0])
      .run();
    const window = [new Date(Date.now() - 3_600_000).toISOString(), new Date(Date.now() + 1000).toISOString()] as const;
    const now = new Date().toISOString();
    const first = await recoverDeliveries(env.DB, hook.id, app, ...window, now, 'recovery-1');
    const again = await recoverDeliveries(env.DB, hook.id, app, ...window, now, 'recovery-1');
    expect(first).toEqual({ outcome: 'recovered', deliveries: [{ id: ids[0], gen: 1 }] });
    expect(again).toEqual(first);
    // Another request recovers nothing more.
    expect(await recoverDeliveries(env.DB, hook.id, app, ...window, now, 'recovery-2')).toEqual({
      outcome: 'recovered',
      deliveries: [],
    });
  });
});
