import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { countingDb, faultyDb, insertWebhook } from './helpers/database';
import { fakeQueue } from './helpers/queues';
import { expectEventFail, expectInvalidToken, expectValue } from './helpers/replies';
import { eventRequest, fetchAndWait, ORIGIN } from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const BATCH_URL = `${ORIGIN}/v1.0/platform/nft/events`;

const batchRequest = (body: unknown, headers: Record<string, string>) =>
  new Request(BATCH_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** Publishes a batch with a platform token; what it queues is kept by a fake queue. */
async function publishBatch(body: unknown, overrides: Record<string, unknown> = {}, headers?: Record<string, string>) {
  const queue = fakeQueue();
  const res = await fetchAndWait(
    { DELIVERIES: queue.binding, ...overrides },
    batchRequest(body, headers ?? bearer(await platformToken())),
  );
  return { res, sent: queue.sent };
}

/** Events and deliveries stored for some applications. */
async function counts(...apps: string[]) {
  const list = JSON.stringify(apps);
  const row = await env.DB.prepare(
    `SELECT (SELECT COUNT(*) FROM events WHERE app_id IN (SELECT value FROM json_each(?1))) AS events,
       (SELECT COUNT(*) FROM deliveries WHERE app_id IN (SELECT value FROM json_each(?1))) AS deliveries`,
  )
    .bind(list)
    .first<{ events: number; deliveries: number }>();
  return row;
}

const event = (app: string, id: string, type = 'NEW_NFT') => ({ app_id: app, type, id, data: { token_id: id } });

describe('POST /v1.0/platform/nft/events', () => {
  it('stores every event of several applications with its deliveries in one round trip, 202 with the ids in order', async () => {
    const [a, b] = [freshApp(), freshApp()];
    const hookA = await insertWebhook(a, { url: 'https://a.example.com/h' });
    const hookB = await insertWebhook(b, { url: 'https://b.example.com/h' });
    const { db, calls } = countingDb(env.DB);

    const { res, sent } = await publishBatch({ events: [event(a, 'm1'), event(b, 'm2'), event(a, 'm3')] }, { DB: db });

    const { value } = await expectValue<{ event_ids: string[] }>(res, 202);
    expect(Object.keys(value)).toEqual(['event_ids']);
    expect(value.event_ids).toHaveLength(3);
    expect(new Set(value.event_ids).size).toBe(3);
    expect(calls()).toBe(1);
    const stored = await env.DB.prepare(
      `SELECT e.event_id, e.app_id, e.source_key, CAST(d.webhook_id AS TEXT) AS webhook_id
       FROM events AS e JOIN deliveries AS d ON d.event_id = e.event_id
       WHERE e.app_id IN (?1, ?2) ORDER BY e.app_id, e.source_key`,
    )
      .bind(a, b)
      .all();
    expect(stored.results).toEqual([
      { event_id: value.event_ids[0], app_id: a, source_key: 'id:m1', webhook_id: hookA },
      { event_id: value.event_ids[2], app_id: a, source_key: 'id:m3', webhook_id: hookA },
      { event_id: value.event_ids[1], app_id: b, source_key: 'id:m2', webhook_id: hookB },
    ]);
    expect(sent).toHaveLength(3);
  });

  it('treats an id repeated in one batch as one event, and a batch sent again stores nothing twice', async () => {
    const app = freshApp();
    await insertWebhook(app, { url: 'https://again.example.com/h' });
    const batch = { events: [event(app, 'x1'), event(app, 'x2'), event(app, 'x1', 'MOD_NFT')] };

    const first = await expectValue<{ event_ids: string[] }>((await publishBatch(batch)).res, 202);
    expect(first.value.event_ids[0]).toBe(first.value.event_ids[2]);
    expect(await counts(app)).toEqual({ events: 2, deliveries: 2 });

    const { res, sent } = await publishBatch(batch);
    const again = await expectValue<{ event_ids: string[] }>(res, 202);
    expect(again.value.event_ids).toEqual(first.value.event_ids);
    expect(sent).toEqual([]);
    expect(await counts(app)).toEqual({ events: 2, deliveries: 2 });
  });

  it('answers an id published before, one at a time, with that event, and delivers it no second time', async () => {
    const app = freshApp();
    await insertWebhook(app, { url: 'https://single.example.com/h' });
    const queue = fakeQueue();
    const single = await fetchAndWait(
      { DELIVERIES: queue.binding },
      eventRequest(event(app, 'one'), bearer(await platformToken())),
    );
    const { value: first } = await expectValue<{ event_id: string }>(single, 202);

    const { res, sent } = await publishBatch({ events: [event(app, 'two'), event(app, 'one')] });

    const { value } = await expectValue<{ event_ids: string[] }>(res, 202);
    expect(value.event_ids[1]).toBe(first.event_id);
    expect(sent).toHaveLength(1);
    expect(await counts(app)).toEqual({ events: 2, deliveries: 2 });
  });

  it.each([
    ['not an object', [1], 'body must be a JSON object'],
    ['no events', {}, 'events must be an array of 1 to 100 events'],
    ['an empty list', { events: [] }, 'events must be an array of 1 to 100 events'],
    [
      '101 events',
      { events: Array.from({ length: 101 }, (_, i) => event('x', `e${i}`)) },
      'events must be an array of 1 to 100 events',
    ],
  ])('refuses %s with 400, storing nothing', async (_what, body, detail) => {
    const { res, sent } = await publishBatch(body);
    await expectEventFail(res, 400);
    expect(res.headers.get('x-error-detail')).toBe(detail);
    expect(sent).toEqual([]);
  });

  it('validates the batch whole: one invalid event is a 400 naming its index, and none is stored', async () => {
    const app = freshApp();
    await insertWebhook(app, { url: 'https://whole.example.com/h' });
    const cases: [unknown, string][] = [
      [{ app_id: app, type: 'NEW_NFT', data: {} }, 'events[2]: id is required'],
      [{ app_id: app, type: 'bad type', id: 'z', data: {} }, 'events[2]: type must be 1 to 64 letters, digits, _ or .'],
      [{ app_id: app, type: 'NEW_NFT', id: 'z', data: [] }, 'events[2]: data must be a JSON object'],
      ['text', 'events[2]: event must be a JSON object'],
    ];
    for (const [bad, detail] of cases) {
      const { res, sent } = await publishBatch({ events: [event(app, 'ok1'), event(app, 'ok2'), bad] });
      await expectEventFail(res, 400);
      expect(res.headers.get('x-error-detail')).toBe(detail);
      expect(sent).toEqual([]);
    }
    expect(await counts(app)).toEqual({ events: 0, deliveries: 0 });
  });

  it('accepts a body of up to 1 MiB and refuses a larger one with 413; each event at most 64 KiB, as published alone; JSON only (415)', async () => {
    const app = freshApp();
    const note = 'x'.repeat(10_000);
    const events = Array.from({ length: 100 }, (_, i) => ({ ...event(app, `big${i}`), data: { note } }));
    const fits = await publishBatch({ events });
    expect((await expectValue<{ event_ids: string[] }>(fits.res, 202)).value.event_ids).toHaveLength(100);

    const over = await publishBatch({ events: [{ ...event(app, 'huge'), data: { note: 'y'.repeat(1024 * 1024) } }] });
    await expectEventFail(over.res, 413);
    const oneTooLarge = await publishBatch({
      events: [event(app, 'small'), { ...event(app, 'large'), data: { note: 'z'.repeat(64 * 1024) } }],
    });
    await expectEventFail(oneTooLarge.res, 400);
    expect(oneTooLarge.res.headers.get('x-error-detail')).toBe('events[1]: event larger than 65536 bytes');
    const text = await fetchAndWait(
      {},
      new Request(BATCH_URL, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...bearer(await platformToken()) },
        body: '{"events":[]}',
      }),
    );
    await expectEventFail(text, 415);
    expect(await counts(app)).toEqual({ events: 100, deliveries: 0 });
  });

  it('needs a token with the events:publish scope (401 without a token, 403 without the scope)', async () => {
    const app = freshApp();
    const none = await publishBatch({ events: [event(app, 'a')] }, {}, {});
    await expectInvalidToken(none.res);
    const plain = await publishBatch({ events: [event(app, 'a')] }, {}, bearer(await tokenFor(app)));
    await expectEventFail(plain.res, 403);
    expect(plain.res.headers.get('www-authenticate')).toContain('error="insufficient_scope", scope="events:publish"');
    expect(await counts(app)).toEqual({ events: 0, deliveries: 0 });
  });

  it('answers a storage failure 503 with Retry-After, stores nothing, and the same batch sent again stores each event once', async () => {
    const app = freshApp();
    await insertWebhook(app, { url: 'https://flaky.example.com/h' });
    const batch = { events: [event(app, 's1'), event(app, 's2')] };
    const broken = faultyDb([{ before: 'D1_ERROR: no such table: events' }]);

    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const failed = await publishBatch(batch, { DB: broken.db });
    await expectEventFail(failed.res, 503);
    expect(failed.res.headers.get('retry-after')).toBe('2');
    // The log keeps what D1 said.
    const line = error.mock.calls.map((c) => JSON.parse(String(c[0]))).find((l) => l.msg === 'storage failure');
    expect(line?.error).toContain('no such table: events');
    expect(await counts(app)).toEqual({ events: 0, deliveries: 0 });

    // The reply of a batch that committed is lost: sent again, it stores nothing twice.
    const lost = faultyDb([
      { after: 'Network connection lost' },
      { after: 'Network connection lost' },
      { after: 'Network connection lost' },
      { after: 'Network connection lost' },
    ]);
    const unknown = await publishBatch(batch, { DB: lost.db });
    await expectEventFail(unknown.res, 503);
    const { res } = await publishBatch(batch);
    const { value } = await expectValue<{ event_ids: string[] }>(res, 202);
    expect(value.event_ids).toHaveLength(2);
    expect(await counts(app)).toEqual({ events: 2, deliveries: 2 });
  });
});

describe('the publishers limiter', () => {
  it('counts single and batch publishing per publisher, never on the applications limiter: 429 past it', async () => {
    const refuseAll = { limit: async () => ({ success: false }) };
    const overrides = { PUBLISH_RATE_LIMITER: env.TEST_PUBLISH_LIMITER, APP_RATE_LIMITER: refuseAll };
    const app = freshApp();
    const token = bearer(await platformToken({ sub: 'limited-publisher' }));
    const single = (id: string) => fetchAndWait(overrides, eventRequest(event(app, id), token));

    await expectValue(await single('l1'), 202);
    await expectValue(
      (await publishBatch({ events: [event(app, 'l2'), event(app, 'l3')] }, overrides, token)).res,
      202,
    );
    await expectValue(await single('l4'), 202);
    const limited = await single('l5');
    await expectEventFail(limited, 429);
    expect(limited.headers.get('retry-after')).toBe('60');
    const batchLimited = await publishBatch({ events: [event(app, 'l6')] }, overrides, token);
    await expectEventFail(batchLimited.res, 429);
    expect(await counts(app)).toEqual({ events: 4, deliveries: 0 });

    // Another publisher has a limit of its own.
    const other = bearer(await platformToken({ sub: 'another-publisher' }));
    await expectValue(await fetchAndWait(overrides, eventRequest(event(app, 'l7'), other)), 202);
  });
});
