import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { appCounts, appState } from './helpers/app-state';
import { countingDb, faultyDb, insertWebhook } from './helpers/database';
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

/** Publishes a batch with a platform token (bindings changed by `overrides`). */
async function publishBatch(body: unknown, overrides: Record<string, unknown> = {}, headers?: Record<string, string>) {
  const res = await fetchAndWait(overrides, batchRequest(body, headers ?? bearer(await platformToken())));
  return { res };
}

/** Events and deliveries stored for some applications, in their objects. */
async function counts(...apps: string[]) {
  const total = { events: 0, deliveries: 0 };
  for (const app of apps) {
    const n = await appCounts(app);
    total.events += n.events;
    total.deliveries += n.deliveries;
  }
  return total;
}

/** An APPLICATIONS binding whose objects' publish fails: before storing, or after (the reply lost). */
function failingApplications(when: 'before' | 'after') {
  let calls = 0;
  const binding = {
    getByName: (name: string) => ({
      publish: async (...args: Parameters<ReturnType<typeof env.APPLICATIONS.getByName>['publish']>) => {
        calls++;
        if (when === 'after') await env.APPLICATIONS.getByName(name).publish(...args);
        throw new Error(`object failure ${when} storing`);
      },
    }),
  };
  return { binding, calls: () => calls };
}

const event = (app: string, id: string, type = 'NEW_NFT') => ({ app_id: app, type, id, data: { token_id: id } });

describe('POST /v1.0/platform/nft/events', () => {
  it('stores every event of several applications with its deliveries in one round trip, 202 with the ids in order', async () => {
    const [a, b] = [freshApp(), freshApp()];
    const hookA = await insertWebhook(a, { url: 'https://a.example.com/h' });
    const hookB = await insertWebhook(b, { url: 'https://b.example.com/h' });
    const { db, calls } = countingDb(env.DB);

    const { res } = await publishBatch({ events: [event(a, 'm1'), event(b, 'm2'), event(a, 'm3')] }, { DB: db });

    const { value } = await expectValue<{ event_ids: string[] }>(res, 202);
    expect(Object.keys(value)).toEqual(['event_ids']);
    expect(value.event_ids).toHaveLength(3);
    expect(new Set(value.event_ids).size).toBe(3);
    expect(calls()).toBe(1);
    const stored: unknown[] = [];
    for (const app of [a, b]) {
      const { events, deliveries } = await appState(app);
      for (const e of [...events].sort((x, y) => String(x.source_key).localeCompare(String(y.source_key)))) {
        for (const d of deliveries.filter((d) => d.event_id === e.event_id)) {
          stored.push({ event_id: e.event_id, app_id: app, source_key: e.source_key, webhook_id: d.webhook_id });
        }
      }
    }
    expect(stored).toEqual([
      { event_id: value.event_ids[0], app_id: a, source_key: 'id:m1', webhook_id: hookA },
      { event_id: value.event_ids[2], app_id: a, source_key: 'id:m3', webhook_id: hookA },
      { event_id: value.event_ids[1], app_id: b, source_key: 'id:m2', webhook_id: hookB },
    ]);
  });

  it('treats an id repeated in one batch as one event, and a batch sent again stores nothing twice', async () => {
    const app = freshApp();
    await insertWebhook(app, { url: 'https://again.example.com/h' });
    const batch = { events: [event(app, 'x1'), event(app, 'x2'), event(app, 'x1', 'MOD_NFT')] };

    const first = await expectValue<{ event_ids: string[] }>((await publishBatch(batch)).res, 202);
    expect(first.value.event_ids[0]).toBe(first.value.event_ids[2]);
    expect(await counts(app)).toEqual({ events: 2, deliveries: 2 });

    const { res } = await publishBatch(batch);
    const again = await expectValue<{ event_ids: string[] }>(res, 202);
    expect(again.value.event_ids).toEqual(first.value.event_ids);
    expect(await counts(app)).toEqual({ events: 2, deliveries: 2 });
  });

  it('answers an id published before, one at a time, with that event, and delivers it no second time', async () => {
    const app = freshApp();
    await insertWebhook(app, { url: 'https://single.example.com/h' });
    const single = await fetchAndWait({}, eventRequest(event(app, 'one'), bearer(await platformToken())));
    const { value: first } = await expectValue<{ event_id: string }>(single, 202);

    const { res } = await publishBatch({ events: [event(app, 'two'), event(app, 'one')] });

    const { value } = await expectValue<{ event_ids: string[] }>(res, 202);
    expect(value.event_ids[1]).toBe(first.event_id);
    const { deliveries } = await appState(app);
    expect(deliveries.map((d) => d.event_id).sort()).toEqual([first.event_id, value.event_ids[0]].sort());
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
    const before = await counts('x');
    const { res } = await publishBatch(body);
    await expectEventFail(res, 400);
    expect(res.headers.get('x-error-detail')).toBe(detail);
    expect(await counts('x')).toEqual(before);
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
      const { res } = await publishBatch({ events: [event(app, 'ok1'), event(app, 'ok2'), bad] });
      await expectEventFail(res, 400);
      expect(res.headers.get('x-error-detail')).toBe(detail);
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

  it('refuses the whole batch for one app_id with a control character or a lone surrogate: 400 naming the event', async () => {
    const app = freshApp();
    for (const bad of ['x\u0000', 'x\u007f', '\udfff']) {
      const { res } = await publishBatch(JSON.stringify({ events: [event(app, 'ok'), { ...event(bad, 'bad') }] }));
      expect(res.headers.get('x-error-detail')).toBe(
        'events[1]: app_id must be a string of 1 to 255 characters, without control characters or lone surrogates',
      );
      await expectEventFail(res, 400);
    }
    expect(await counts(app)).toEqual({ events: 0, deliveries: 0 });
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

    // The application's object fails: 503 with Retry-After, nothing stored.
    const down = failingApplications('before');
    const refused = await publishBatch(batch, { APPLICATIONS: down.binding });
    await expectEventFail(refused.res, 503);
    expect(refused.res.headers.get('retry-after')).toBe('2');
    expect(down.calls()).toBe(1);
    expect(await counts(app)).toEqual({ events: 0, deliveries: 0 });

    // The object stored the batch but its reply is lost: sent again, it stores nothing twice.
    const lost = failingApplications('after');
    const unknown = await publishBatch(batch, { APPLICATIONS: lost.binding });
    await expectEventFail(unknown.res, 503);
    expect(await counts(app)).toEqual({ events: 2, deliveries: 2 });
    const { res } = await publishBatch(batch);
    const { value } = await expectValue<{ event_ids: string[] }>(res, 202);
    expect(value.event_ids).toHaveLength(2);
    expect(await counts(app)).toEqual({ events: 2, deliveries: 2 });
  });
});

describe('a batch of several applications, one of whose objects fails', () => {
  it('answers 503 with Retry-After; sent again, it stores each event once', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const [a, b] = [freshApp(), freshApp()];
    await insertWebhook(a, { url: 'https://a.example.com/h' });
    await insertWebhook(b, { url: 'https://b.example.com/h' });
    const batch = { events: [event(a, 'p1'), event(b, 'p2'), event(a, 'p3')] };
    const onlyB = {
      getByName: (name: string) =>
        name === b
          ? {
              publish: async () => {
                throw new Error('object unavailable');
              },
            }
          : env.APPLICATIONS.getByName(name),
    };
    const failed = await publishBatch(batch, { APPLICATIONS: onlyB });
    await expectEventFail(failed.res, 503);
    expect(failed.res.headers.get('retry-after')).toBe('2');
    expect(await counts(b)).toEqual({ events: 0, deliveries: 0 });

    const { value } = await expectValue<{ event_ids: string[] }>((await publishBatch(batch)).res, 202);
    expect(new Set(value.event_ids).size).toBe(3);
    expect(await counts(a)).toEqual({ events: 2, deliveries: 2 });
    expect(await counts(b)).toEqual({ events: 1, deliveries: 1 });
    const ids = (await appState(a)).events.map((e) => e.event_id).sort();
    expect(ids).toEqual([value.event_ids[0], value.event_ids[2]].sort());
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
