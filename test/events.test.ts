import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { appState } from './helpers/app-state';
import { countingDb, insertWebhook } from './helpers/database';
import { consume, EVENTS_QUEUE } from './helpers/queues';
import { expectEnvelope, expectEventFail, expectValue } from './helpers/replies';
import { eventRequest, fetchAndWait, post } from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** The events and deliveries of an application, as its objects hold them. */
const stored = appState;

/** An APPLICATIONS binding whose objects fail every call. */
const failingApplications = {
  getByName: () => ({
    publish: async () => {
      throw new Error('object unavailable');
    },
  }),
};

/** Publishes `body` with a platform token (bindings changed by `overrides`). */
async function publish(body: unknown, headers?: Record<string, string>, overrides: Record<string, unknown> = {}) {
  const res = await fetchAndWait(overrides, eventRequest(body, headers ?? bearer(await platformToken())));
  return { res };
}

describe('POST /v1.0/platform/nft/event', () => {
  it('stores the event with one delivery per enabled webhook whose event_types match, at their endpoints', async () => {
    const app = freshApp();
    const every = await insertWebhook(app, { url: 'https://every.example.com/h' });
    const token = bearer(await tokenFor(app));
    const matching = (
      await expectValue<{ webhook_id: number }>(
        await post({ url: 'https://match.example.com/h', event_types: ['MOD_NFT', 'NEW_NFT'] }, token),
        201,
      )
    ).value.webhook_id;
    await post({ url: 'https://other-type.example.com/h', event_types: ['MOD_NFT'] }, token);
    await insertWebhook(app, { url: 'https://off.example.com/h', enabled: false });
    await insertWebhook(freshApp(), { url: 'https://foreign.example.com/h' });

    const { res } = await publish({ app_id: app, type: 'NEW_NFT', data: { token_id: '7' } });

    const { value } = await expectValue<{ event_id: string }>(res, 202);
    expect(Object.keys(value)).toEqual(['event_id']);
    expect(value.event_id).toMatch(/^evt_[0-9a-f]{32}$/);
    const { events, deliveries } = await stored(app);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ event_id: value.event_id, source_key: null });
    expect(deliveries.map((d) => [d.webhook_id, d.event_id, d.message_id, d.type])).toEqual([
      [every, value.event_id, value.event_id, 'NEW_NFT'],
      [String(matching), value.event_id, value.event_id, 'NEW_NFT'],
    ]);
    expect(deliveries[0]!.delivery_id).toMatch(/^\d+$/);
    // Every delivery of the event sends the same body.
    expect(deliveries[1]!.payload).toBe(deliveries[0]!.payload);
  });

  it.each([
    ['DELIVERY_RETRY_SCHEDULE', '2s 13h'],
    ['DELIVERY_TIMEOUT_SECONDS', '31'],
    ['AUTO_DISABLE_AFTER_HOURS', '0'],
    ['DELIVERY_RETENTION_DAYS', 'x'],
    ['EVENT_DEDUPE_HOURS', '721'],
  ])(
    'fails closed on an invalid %s (%s): 500 and a log line naming it, nothing stored or queued',
    async (name, bad) => {
      const error = vi.spyOn(console, 'error').mockImplementation(() => {});
      const app = freshApp();
      await insertWebhook(app);
      const { res } = await publish({ app_id: app, type: 'NEW_NFT', data: {} }, undefined, { [name]: bad });
      await expectEventFail(res, 500);
      expect(await stored(app)).toEqual({ events: [], deliveries: [] });
      expect(error.mock.calls.map((c) => String(c[0])).join('\n')).toContain(`configuration error: ${name}: `);
    },
  );

  it('writes the body every attempt sends: type, the time it was stored, data with its exact digits', async () => {
    const app = freshApp();
    await insertWebhook(app);
    const raw = `{"app_id":"${app}","type":"MEMBER_NFT_ADD","data":{"amount":123456789012345678901234567890,"price":1.50,"nested":{"e":1e400}}}`;
    const { res } = await publish(raw);
    await expectValue(res, 202);
    const { events, deliveries } = await stored(app);
    const [event] = events;
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.created_at).toBe(event!.created_at);
    expect(deliveries[0]!.payload).toBe(
      `{"type":"MEMBER_NFT_ADD","timestamp":"${event!.created_at}","data":{"amount":123456789012345678901234567890,"price":1.50,"nested":{"e":1e400}}}`,
    );
    expect(event!.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('is one D1 round trip', async () => {
    const app = freshApp();
    await insertWebhook(app);
    const { db, calls } = countingDb(env.DB);
    const { res } = await publish({ app_id: app, type: 'NEW_NFT', data: {} }, undefined, { DB: db });
    await expectValue(res, 202);
    expect(calls()).toBe(1);
  });

  it('is idempotent per application: the same id answers the same event and delivers nothing again', async () => {
    const app = freshApp();
    const other = freshApp();
    await insertWebhook(app);
    await insertWebhook(other);
    const first = await publish({ app_id: app, type: 'NEW_NFT', data: { n: 1 }, id: 'mint-42' });
    const { value } = await expectValue<{ event_id: string }>(first.res, 202);
    expect((await stored(app)).deliveries).toHaveLength(1);

    const again = await publish({ app_id: app, type: 'NEW_NFT', data: { n: 1 }, id: 'mint-42' });
    expect((await expectValue<{ event_id: string }>(again.res, 202)).value.event_id).toBe(value.event_id);
    const mine = await stored(app);
    expect(mine.events).toHaveLength(1);
    expect(mine.events[0]?.source_key).toBe('id:mint-42');
    expect(mine.deliveries).toHaveLength(1);

    // The same id from another application is another event.
    const theirs = await publish({ app_id: other, type: 'NEW_NFT', data: {}, id: 'mint-42' });
    expect((await expectValue<{ event_id: string }>(theirs.res, 202)).value.event_id).not.toBe(value.event_id);
    expect((await stored(other)).deliveries).toHaveLength(1);
  });

  it('answers an event for an application without webhooks: stored, nothing to deliver', async () => {
    const app = freshApp();
    const { res } = await publish({ app_id: app, type: 'NEW_NFT', data: {} });
    await expectValue(res, 202);
    expect(await stored(app)).toMatchObject({ events: [{ source_key: null }], deliveries: [] });
  });

  it('refuses a valid application token without the events:publish scope: 403 insufficient_scope', async () => {
    const app = freshApp();
    await insertWebhook(app);
    for (const scope of [undefined, 'events:read', 'events:publish2', 'xevents:publish', ['events:read']]) {
      const { res } = await publish(
        { app_id: app, type: 'NEW_NFT', data: {} },
        bearer(await tokenFor(app, scope === undefined ? {} : { scope })),
      );
      expect(res.headers.get('www-authenticate')).toBe(
        'Bearer realm="nft-webhook", error="insufficient_scope", scope="events:publish"',
      );
      await expectEventFail(res, 403);
    }
    expect((await stored(app)).events).toEqual([]);
    // The scope may stand among others.
    const { res } = await publish(
      { app_id: app, type: 'NEW_NFT', data: {} },
      bearer(await platformToken({ scope: 'a events:publish b' })),
    );
    await expectValue(res, 202);
  });

  it('checks the token before the scope, and the scope before the body', async () => {
    const bad = await publish('not json', bearer('nope'));
    await expectEnvelope(bad.res, 401, 20004, 'Invalid jwt token');
    const unscoped = await publish('not json', bearer(await tokenFor('app-x')));
    await expectEventFail(unscoped.res, 403);
  });

  it.each([
    ['a body that is not an object', [1]],
    ['no app_id', { type: 'NEW_NFT', data: {} }],
    ['an empty app_id', { app_id: '', type: 'NEW_NFT', data: {} }],
    ['an app_id of 256 characters', { app_id: 'a'.repeat(256), type: 'NEW_NFT', data: {} }],
    ['a numeric app_id', { app_id: 7, type: 'NEW_NFT', data: {} }],
    ['no type', { app_id: 'a', data: {} }],
    ['a type with a space', { app_id: 'a', type: 'NEW NFT', data: {} }],
    ['a type of 65 characters', { app_id: 'a', type: 'A'.repeat(65), data: {} }],
    ['no data', { app_id: 'a', type: 'NEW_NFT' }],
    ['data that is an array', { app_id: 'a', type: 'NEW_NFT', data: [] }],
    ['data that is null', { app_id: 'a', type: 'NEW_NFT', data: null }],
    ['an id with a dot', { app_id: 'a', type: 'NEW_NFT', data: {}, id: 'a.b' }],
    ['an id of 65 characters', { app_id: 'a', type: 'NEW_NFT', data: {}, id: 'i'.repeat(65) }],
    ['a numeric id', { app_id: 'a', type: 'NEW_NFT', data: {}, id: 5 }],
  ])('answers 400 for %s, and stores nothing', async (_, body) => {
    const before = await stored('a');
    const { res } = await publish(body);
    expect(res.headers.get('x-error-detail')).toBeTruthy();
    await expectEventFail(res, 400);
    expect(await stored('a')).toEqual(before);
  });

  it.each([
    ['NUL', 'app\u0000x'],
    ['a newline', 'app\nx'],
    ['a unit separator', 'app\u001fx'],
    ['DEL', 'app\u007fx'],
    ['a lone high surrogate', 'app\ud800x'],
    ['a lone low surrogate', 'app\udc00'],
  ])('answers 400 for an app_id with %s (as a JSON escape), before any storage', async (_, appId) => {
    const counted = countingDb(env.DB);
    // JSON.stringify writes a control character and a lone surrogate as \u escapes.
    const { res } = await publish(JSON.stringify({ app_id: appId, type: 'NEW_NFT', data: {} }), undefined, {
      DB: counted.db,
    });
    expect(res.headers.get('x-error-detail')).toBe(
      'app_id must be a string of 1 to 255 characters, without control characters or lone surrogates',
    );
    await expectEventFail(res, 400);
    expect(counted.calls()).toBe(0);
    expect(await stored(appId)).toEqual({ events: [], deliveries: [] });
  });

  it('takes any other app_id as it is: spaces, accents, an emoji (a surrogate pair)', async () => {
    const app = `${freshApp()} é/😀`;
    await insertWebhook(app);
    const { res } = await publish({ app_id: app, type: 'NEW_NFT', data: {} });
    await expectValue(res, 202);
    expect((await stored(app)).events).toHaveLength(1);
  });

  it("answers 503 with Retry-After when the application's object fails, storing nothing", async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    await insertWebhook(app);
    const { res } = await publish({ app_id: app, type: 'NEW_NFT', data: {}, id: 'down-1' }, undefined, {
      APPLICATIONS: failingApplications,
    });
    await expectEventFail(res, 503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(await stored(app)).toEqual({ events: [], deliveries: [] });
  });

  it('accepts 64 KiB and answers 413 past it; 415 for another media type', async () => {
    const app = freshApp();
    const body = (size: number) => {
      const head = `{"app_id":"${app}","type":"NEW_NFT","data":{"pad":"`;
      return `${head}${'x'.repeat(size - head.length - 3)}"}}`;
    };
    expect(body(65536)).toHaveLength(65536);
    await expectValue((await publish(body(65536))).res, 202);
    await expectEventFail((await publish(body(65537))).res, 413);
    const token = bearer(await platformToken());
    const text = new Request(eventRequest({}, token), { headers: { ...token, 'content-type': 'text/plain' } });
    await expectEventFail(await fetchAndWait({}, text), 415);
    expect((await stored(app)).events).toHaveLength(1);
  });

  it('answers 405 with Allow: POST for other methods', async () => {
    const res = await fetchAndWait({}, new Request(eventRequest({}, {}).url, { method: 'GET' }));
    expect(res.headers.get('allow')).toBe('POST');
    await expectEnvelope(res, 405, 405, 'method not allowed');
  });
});

describe('the events queue', () => {
  it('stores each message as an event with its deliveries at their endpoints', async () => {
    const app = freshApp();
    const webhook = await insertWebhook(app);
    const { result, ids } = await consume(EVENTS_QUEUE, [{ app_id: app, type: 'NEW_NFT', data: { a: 1 } }]);
    expect(result.ackAll || result.explicitAcks.length === 1).toBe(true);
    expect(result.retryMessages).toEqual([]);
    const { events, deliveries } = await stored(app);
    expect(events).toMatchObject([{ source_key: `msg:${ids[0]}` }]);
    expect(deliveries.map((d) => [d.webhook_id, d.event_id])).toEqual([[webhook, events[0]!.event_id]]);
    expect(deliveries[0]!.payload).toContain('"data":{"a":1}');
  });

  it('makes a message without id idempotent by its message id: redelivered, it is one event', async () => {
    const app = freshApp();
    await insertWebhook(app);
    const event = { app_id: app, type: 'NEW_NFT', data: {} };
    await consume(EVENTS_QUEUE, [event], {}, { ids: ['queue-msg-1'] });
    await consume(EVENTS_QUEUE, [event], {}, { ids: ['queue-msg-1'], attempts: 2 });
    const { events, deliveries } = await stored(app);
    expect(events).toHaveLength(1);
    expect(events[0]?.source_key).toBe('msg:queue-msg-1');
    expect(deliveries).toHaveLength(1);
  });

  it('shares the publisher id with HTTP: an id published over HTTP is the same event from the queue', async () => {
    const app = freshApp();
    await insertWebhook(app);
    const { res } = await publish({ app_id: app, type: 'NEW_NFT', data: {}, id: 'both-ways' });
    const { value } = await expectValue<{ event_id: string }>(res, 202);
    await consume(EVENTS_QUEUE, [{ app_id: app, type: 'NEW_NFT', data: {}, id: 'both-ways' }]);
    const { events, deliveries } = await stored(app);
    expect(events).toMatchObject([{ event_id: value.event_id, source_key: 'id:both-ways' }]);
    expect(deliveries).toHaveLength(1);
  });

  it('drops a malformed message with a log line that names the reason, and never retries it', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const app = freshApp();
    const { result, ids } = await consume(EVENTS_QUEUE, [{ app_id: app, type: 'bad type', data: {} }, 'not json', 42]);
    expect(result.retryMessages).toEqual([]);
    expect(result.explicitAcks.sort()).toEqual([...ids].sort());
    const lines = warn.mock.calls.map((c) => JSON.parse(String(c[0])));
    expect(lines.filter((l) => l.msg === 'dropped a malformed event message')).toHaveLength(3);
    expect(lines[0]).toMatchObject({ message_id: ids[0], reason: 'type must be 1 to 64 letters, digits, _ or .' });
    expect((await stored(app)).events).toEqual([]);
  });

  it('retries the batch when D1 cannot store it', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const boom = async () => Promise.reject(new Error('D1_ERROR: boom'));
    const failing = { prepare: () => ({ bind: () => ({ all: boom, first: boom, run: boom }) }), batch: boom };
    const app = freshApp();
    const { result, ids, retries } = await consume(
      EVENTS_QUEUE,
      [{ app_id: app, type: 'NEW_NFT', data: {} }],
      { DB: failing },
      { attempts: 3 },
    );
    expect(result.retryMessages).toEqual([{ msgId: ids[0] }]);
    // 10 s, doubling with every attempt.
    expect(retries).toEqual({ [ids[0]!]: 40 });
    expect((await stored(app)).events).toEqual([]);
  });
});

describe('the events queue, when storage fails', () => {
  it("retries the batch when the application's object cannot store it", async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    await insertWebhook(app);
    const { result, ids, retries } = await consume(
      EVENTS_QUEUE,
      [{ app_id: app, type: 'NEW_NFT', data: {} }],
      { APPLICATIONS: failingApplications },
      { attempts: 1 },
    );
    expect(result.retryMessages).toEqual([{ msgId: ids[0] }]);
    expect(retries).toEqual({ [ids[0]!]: 10 });
    expect(await stored(app)).toEqual({ events: [], deliveries: [] });
  });
});

describe('event bodies, more', () => {
  it('refuses data that is a number, however it is spelled', async () => {
    for (const data of ['1', '1.0', '1e400', '"x"', 'true']) {
      const { res } = await publish(`{"app_id":"a","type":"NEW_NFT","data":${data}}`);
      await expectEventFail(res, 400);
    }
  });

  it('reads a queue message sent as JSON text like an HTTP body: exact digits, depth limit', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const app = freshApp();
    await insertWebhook(app);
    const text = `{"app_id":"${app}","type":"NEW_NFT","data":{"big":123456789012345678901234567890}}`;
    const deep = `{"app_id":"${app}","type":"NEW_NFT","data":${'['.repeat(2600)}${']'.repeat(2600)}}`;
    await consume(EVENTS_QUEUE, [text, deep]);
    const { events, deliveries } = await stored(app);
    expect(events).toHaveLength(1);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]?.payload).toContain('"data":{"big":123456789012345678901234567890}');
    expect(warn.mock.calls.map((c) => JSON.parse(String(c[0])).reason)).toEqual(['body nested too deeply']);
  });
});
