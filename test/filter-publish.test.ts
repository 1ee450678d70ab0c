// Content filters through publishing: an event is delivered to a webhook whose event_types take
// its type and whose filter matches its event object, as they stand when it is stored. Each
// operator is checked by what the endpoints store after a publish, not only in the matcher.
import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { filterTargets } from '../src/events/filtering';
import type { EventToStore } from '../src/events/store/events';
import { appCounts } from './helpers/app-state';
import { countingDb } from './helpers/database';
import { hostileFilter } from './helpers/filters';
import { applicationOf, applicationSql, deliverDue, deliveriesOfEvent, endpointSql } from './helpers/objects';
import { consume, EVENTS_QUEUE } from './helpers/queues';
import { receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import {
  eventRequest,
  fetchAndWait,
  ORIGIN,
  PATH,
  postJson,
  registerWebhook,
  stoppedAfterEachTest,
} from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const ADDRESS = '0x52908400098527886E0F7030069857D2E4169EE7';

/** Publishes one event (with the source key `id` when given); returns its id. */
async function publish(app: string, type: string, data: unknown, id?: string): Promise<string> {
  const res = await fetchAndWait({}, eventRequest({ app_id: app, type, data, id }, bearer(await platformToken())));
  return (await expectValue<{ event_id: string }>(res, 202)).value.event_id;
}

/** Which of `hooks` the endpoints hold a delivery of the event for. */
async function receiversOf(eventId: string, hooks: string[]): Promise<string[]> {
  const got: string[] = [];
  for (const id of hooks) if ((await deliveriesOfEvent(id, eventId)).length > 0) got.push(id);
  return got;
}

/** The deliveries the application made, in all (as its webhooks' endpoints hold them). */
const deliveriesMade = async (app: string) => (await appCounts(app)).deliveries;

const patch = async (app: string, body: unknown) =>
  fetchAndWait(
    {},
    new Request(ORIGIN + PATH, {
      method: 'PATCH',
      headers: { ...bearer(await tokenFor(app)), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );

const addValues = async (app: string, webhookId: string, add: string[], remove: string[] = []) =>
  expectValue((await postJson('values', { webhook_id: webhookId, add, remove }, bearer(await tokenFor(app)))).res);

/** Each case: a filter, data it matches, data it does not. */
const CASES: [name: string, filter: unknown, yes: unknown, no: unknown][] = [
  ['a bare scalar (equality)', { 'data.contract': 'c1' }, { contract: 'c1' }, { contract: 'c2' }],
  ['equality keeps types', { 'data.n': 42 }, { n: 42 }, { n: '42' }],
  ['$eq', { 'data.flag': { $eq: true } }, { flag: true }, { flag: false }],
  ['$ne (a missing path matches)', { 'data.kind': { $ne: 'burn' } }, {}, { kind: 'burn' }],
  ['$in', { 'data.kind': { $in: ['mint', 'sale'] } }, { kind: 'sale' }, { kind: 'burn' }],
  ['$nin', { 'data.kind': { $nin: ['burn'] } }, { kind: 'mint' }, { kind: 'burn' }],
  ['$gt on numbers', { 'data.price': { $gt: 10 } }, { price: 10.5 }, { price: 10 }],
  [
    '$gte on wei beyond 2^64',
    { 'data.wei': { $gte: '100000000000000000000000' } },
    { wei: '100000000000000000000000' },
    { wei: '99999999999999999999999' },
  ],
  ['$lt', { 'data.token_id': { $lt: '1000' } }, { token_id: '999' }, { token_id: '1000' }],
  ['$lte with a range', { 'data.token_id': { $gte: 10, $lte: 20 } }, { token_id: '20' }, { token_id: '21' }],
  ['$exists true', { 'data.memo': { $exists: true } }, { memo: null }, {}],
  ['$exists false', { 'data.memo': { $exists: false } }, {}, { memo: 'x' }],
  ['$prefix', { 'data.name': { $prefix: 'Dragon' } }, { name: 'Dragon #7' }, { name: 'dragon #7' }],
  ['an address without regard to case', { 'data.owner': ADDRESS }, { owner: ADDRESS.toLowerCase() }, { owner: '0x1' }],
  ['an array index', { 'data.items.1.id': 'b' }, { items: [{ id: 'a' }, { id: 'b' }] }, { items: [{ id: 'b' }] }],
  ['$and', { $and: [{ 'data.a': 1 }, { 'data.b': 2 }] }, { a: 1, b: 2 }, { a: 1, b: 3 }],
  ['$or', { $or: [{ 'data.a': 1 }, { 'data.b': 2 }] }, { a: 0, b: 2 }, { a: 0, b: 0 }],
  ['$not', { $not: { 'data.a': 1 } }, { a: 2 }, { a: 1 }],
  ['every key of an object', { 'data.a': 1, 'data.b': { $exists: true } }, { a: 1, b: 0 }, { a: 1 }],
];

describe('publishing with filters', () => {
  it('delivers each event only to the webhooks whose filter matches it, for every operator', async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    // One webhook per case, each taking only its own type; one without a filter taking every type.
    const plain = await registerWebhook(app, { url: `https://${app}.example.com/plain` });
    const hooks: string[] = [];
    for (const [i, [, filter]] of CASES.entries()) {
      hooks.push(
        (await registerWebhook(app, { url: `https://${app}.example.com/c${i}`, event_types: [`T${i}`], filter })).id,
      );
    }
    for (const [i, [name, , yes, no]] of CASES.entries()) {
      const before = await deliveriesMade(app);
      const matched = await publish(app, `T${i}`, yes);
      const missed = await publish(app, `T${i}`, no);
      expect(await receiversOf(matched, [plain.id, hooks[i] as string]), name).toEqual([plain.id, hooks[i]]);
      expect(await receiversOf(missed, [plain.id, hooks[i] as string]), name).toEqual([plain.id]);
      // No other webhook got either.
      expect(await deliveriesMade(app), name).toBe((before as number) + 3);
    }
  }, 30_000); // about 60 requests and their objects: slow on a loaded machine

  it('matches the type path and $in_set with the webhook value set, addresses in any case', async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    const byType = await registerWebhook(app, { url: `https://${app}.example.com/t`, filter: { type: 'MOD_NFT' } });
    const owners = await registerWebhook(app, {
      url: `https://${app}.example.com/o`,
      filter: { 'data.owner': { $in_set: true } },
    });
    await addValues(app, owners.id, [ADDRESS, 'player-7']);
    const a = await publish(app, 'NEW_NFT', { owner: ADDRESS.toLowerCase() });
    const b = await publish(app, 'MOD_NFT', { owner: 'player-8' });
    const c = await publish(app, 'NEW_NFT', { owner: 'player-7' });
    const d = await publish(app, 'NEW_NFT', { owner: 7 });
    expect(await receiversOf(a, [byType.id, owners.id])).toEqual([owners.id]);
    expect(await receiversOf(b, [byType.id, owners.id])).toEqual([byType.id]);
    expect(await receiversOf(c, [byType.id, owners.id])).toEqual([owners.id]);
    expect(await receiversOf(d, [byType.id, owners.id])).toEqual([]);
  });

  it("$in_set looks in the webhook's own set: of two webhooks with different sets, only the one holding the value", async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    const filter = { 'data.owner': { $in_set: true } };
    const a = await registerWebhook(app, { url: `https://${app}.example.com/a`, filter });
    const b = await registerWebhook(app, { url: `https://${app}.example.com/b`, filter });
    await addValues(app, a.id, ['owner-a', 'both']);
    await addValues(app, b.id, ['owner-b', 'both']);
    const onlyA = await publish(app, 'NEW_NFT', { owner: 'owner-a' });
    const onlyB = await publish(app, 'NEW_NFT', { owner: 'owner-b' });
    const inBoth = await publish(app, 'NEW_NFT', { owner: 'both' });
    const inNone = await publish(app, 'NEW_NFT', { owner: 'owner-c' });
    expect(await receiversOf(onlyA, [a.id, b.id])).toEqual([a.id]);
    expect(await receiversOf(onlyB, [a.id, b.id])).toEqual([b.id]);
    expect(await receiversOf(inBoth, [a.id, b.id])).toEqual([a.id, b.id]);
    expect(await receiversOf(inNone, [a.id, b.id])).toEqual([]);
    // A trial of each webhook's filter answers the same.
    const trial = async (webhookId: string, owner: string) =>
      (
        await expectValue<{ matches: boolean }>(
          (
            await postJson(
              'filter/test',
              { webhook_id: webhookId, event: { type: 'NEW_NFT', data: { owner } } },
              bearer(await tokenFor(app)),
            )
          ).res,
        )
      ).value.matches;
    expect(await trial(b.id, 'owner-a')).toBe(false);
    expect(await trial(a.id, 'owner-a')).toBe(true);
    expect(await trial(a.id, 'owner-b')).toBe(false);
    expect(await trial(b.id, 'owner-b')).toBe(true);
  });

  it('a webhook without a filter receives exactly what it did, and filtered-out events are still stored', async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    const plain = await registerWebhook(app, { url: `https://${app}.example.com/p`, event_types: ['NEW_NFT'] });
    const filtered = await registerWebhook(app, { url: `https://${app}.example.com/f`, filter: { 'data.x': 1 } });
    const ids = [
      await publish(app, 'NEW_NFT', { x: 1 }, 'k1'),
      await publish(app, 'NEW_NFT', { x: 2 }, 'k2'),
      await publish(app, 'MOD_NFT', { x: 1 }, 'k3'),
    ];
    const got = [];
    for (const id of ids) got.push(await receiversOf(id, [plain.id, filtered.id]));
    expect(got).toEqual([[plain.id, filtered.id], [plain.id], [filtered.id]]);
    // Every event is the application's, matched or not: publishing the same id again is one event.
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM dedupe')).toEqual([{ n: 3 }]);
    expect(await publish(app, 'NEW_NFT', { x: 2 }, 'k2')).toBe(ids[1]);
  });

  it('a PATCH or a value set change that has answered applies to every event published after it', async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    const hook = await registerWebhook(app, { filter: { 'data.price': { $gte: 100 } } });
    expect(await receiversOf(await publish(app, 'NEW_NFT', { price: 50 }), [hook.id])).toEqual([]);
    await expectValue(await patch(app, { webhook_id: hook.id, filter: { 'data.price': { $gte: 10 } } }));
    expect(await receiversOf(await publish(app, 'NEW_NFT', { price: 50 }), [hook.id])).toEqual([hook.id]);
    await expectValue(await patch(app, { webhook_id: hook.id, filter: { 'data.who': { $in_set: true } } }));
    expect(await receiversOf(await publish(app, 'NEW_NFT', { who: 'ann' }), [hook.id])).toEqual([]);
    await addValues(app, hook.id, ['ann']);
    expect(await receiversOf(await publish(app, 'NEW_NFT', { who: 'ann' }), [hook.id])).toEqual([hook.id]);
    await addValues(app, hook.id, [], ['ann']);
    expect(await receiversOf(await publish(app, 'NEW_NFT', { who: 'ann' }), [hook.id])).toEqual([]);
    await expectValue(await patch(app, { webhook_id: hook.id, filter: null }));
    expect(await receiversOf(await publish(app, 'NEW_NFT', { who: 'bob' }), [hook.id])).toEqual([hook.id]);
  });

  it('adds no D1 round trip: one read, with a filter and a value set of 100,000 values as without', async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    const hook = await registerWebhook(app, { filter: { 'data.owner': { $in_set: true }, 'data.n': { $gte: 1 } } });
    await runInDurableObject(applicationOf(app), (_i, state) => {
      state.storage.sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
         INSERT INTO webhook_values (webhook_id, value) SELECT ?1, 'owner-' || i FROM n`,
        hook.id,
      );
      state.storage.sql.exec('INSERT INTO value_counts (webhook_id, count) VALUES (?1, 100000)', hook.id);
    });
    const send = async (data: unknown) => {
      const { db, calls } = countingDb(env.DB);
      const res = await fetchAndWait(
        { DB: db },
        eventRequest({ app_id: app, type: 'NEW_NFT', data }, bearer(await platformToken())),
      );
      const eventId = (await expectValue<{ event_id: string }>(res, 202)).value.event_id;
      return { calls: calls(), got: await receiversOf(eventId, [hook.id]) };
    };
    expect(await send({ owner: 'owner-99999', n: 2 })).toEqual({ calls: 1, got: [hook.id] });
    expect(await send({ owner: 'owner-100001', n: 2 })).toEqual({ calls: 1, got: [] });
    expect(await send({ owner: 'owner-5', n: 0 })).toEqual({ calls: 1, got: [] });
  });

  it('events from the queue are filtered the same way', async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    const hook = await registerWebhook(app, { filter: { 'data.price': { $gt: '1000000000000000000' } } });
    const { result } = await consume(EVENTS_QUEUE, [
      { app_id: app, type: 'NEW_NFT', data: { price: '1000000000000000001' }, id: 'q-above' },
      { app_id: app, type: 'NEW_NFT', data: { price: '1000000000000000000' }, id: 'q-at' },
    ]);
    expect(result.explicitAcks).toHaveLength(2);
    const events = await applicationSql<{ event_id: string; source_key: string }>(
      app,
      'SELECT event_id, source_key FROM dedupe ORDER BY source_key',
    );
    expect(events.map((e) => e.source_key)).toEqual(['id:q-above', 'id:q-at']);
    expect(await receiversOf(events[0]?.event_id as string, [hook.id])).toEqual([hook.id]);
    expect(await receiversOf(events[1]?.event_id as string, [hook.id])).toEqual([]);
  });

  it('a batch is filtered event by event', async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    const hook = await registerWebhook(app, { filter: { 'data.n': { $lt: 2 } } });
    const res = await fetchAndWait(
      {},
      new Request(`${ORIGIN}/v1.0/platform/nft/events`, {
        method: 'POST',
        headers: { ...bearer(await platformToken()), 'content-type': 'application/json' },
        body: JSON.stringify({
          events: [0, 1, 2, 3].map((n) => ({ app_id: app, type: 'NEW_NFT', data: { n }, id: `b${n}` })),
        }),
      }),
    );
    const text = await res.text();
    expect(res.status, text).toBe(202);
    const eventIds = [...text.matchAll(/"(evt_[0-9a-f]+)"/g)].map((m) => m[1] as string);
    expect(eventIds).toHaveLength(4);
    const got = [];
    for (const id of eventIds) got.push((await receiversOf(id, [hook.id])).length);
    expect(got).toEqual([1, 1, 0, 0]);
  });
});

describe('publishing with hostile filters', () => {
  // Their endpoints' alarms stop after the test: nothing is sent once the receiver is gone.
  const { register } = stoppedAfterEachTest();

  it('ten hostile filters of 353 $lt tests each against a 65,000-digit value decide each event exactly', async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    // Webhook k's filter: 353 `$lt` tests of data.v, every bound "1" but the last, k.
    const hooks: string[] = [];
    for (let k = 0; k < 10; k++) {
      const { filter } = hostileFilter(String(k));
      hooks.push((await register(app, { url: `https://${app}.example.com/h${k}`, filter })).id);
    }
    const digits = 65_000;
    const nines = await publish(app, 'NEW_NFT', { v: '9'.repeat(digits) });
    const one = await publish(app, 'NEW_NFT', { v: `${'0'.repeat(digits - 1)}1` });
    const zero = await publish(app, 'NEW_NFT', { v: '0'.repeat(digits) });
    expect(await receiversOf(nines, hooks)).toEqual([]);
    expect(await receiversOf(one, hooks)).toEqual(hooks.slice(2));
    expect(await receiversOf(zero, hooks)).toEqual(hooks);
  });

  it('a value set is asked about a value once per event and webhook, however many $in_set tests name it', async () => {
    const app = freshApp();
    // 64 branches, each asking the set about data.to, then failing on data.x.
    const filter = JSON.stringify({
      $or: Array.from({ length: 64 }, () => ({ 'data.to': { $in_set: true }, 'data.x': 1 })),
    });
    const event = (eventId: string, data: unknown): EventToStore => ({
      eventId,
      appId: app,
      sourceKey: null,
      type: 'NEW_NFT',
      payload: JSON.stringify({ type: 'NEW_NFT', timestamp: '2026-11-25T00:00:00.000Z', data }),
      createdAt: '2026-11-25T00:00:00.000Z',
    });
    await runInDurableObject(applicationOf(app), (_i, state) => {
      state.storage.sql.exec("INSERT INTO webhook_values (webhook_id, value) VALUES ('7', 'held')");
      let lookups = 0;
      const sql = new Proxy(state.storage.sql, {
        get(target, key) {
          if (key !== 'exec') return Reflect.get(target, key);
          return (query: string, ...bindings: SqlStorageValue[]) => {
            if (query.includes('FROM webhook_values')) lookups++;
            return target.exec(query, ...bindings);
          };
        },
      });
      const kept = filterTargets(
        sql,
        [event('e1', { to: 'held', x: 0 }), event('e2', { to: 'other', x: 1 }), event('e3', { to: 'held', x: 1 })],
        [
          ['7', '8'],
          ['7', '8'],
          ['7', '8'],
        ],
        { '7': filter, '8': filter },
      );
      expect(kept).toEqual([[], [], ['7']]);
      // Each event, each webhook: one lookup (asked 64 times, but for e3 by webhook 7, whose first branch matches).
      expect(lookups).toBe(6);
    });
  });
});

describe('what ignores filters', () => {
  it('test events, resends and recoveries go to a webhook whatever its filter', async () => {
    const app = freshApp();
    receiver(() => new Response(null, { status: 500 }));
    const hook = await registerWebhook(app, { filter: { 'data.x': 1 } });
    const token = bearer(await tokenFor(app));
    const matched = await publish(app, 'NEW_NFT', { x: 1 });
    const [delivery] = await deliveriesOfEvent(hook.id, matched);
    // From now on the filter matches nothing the tests below send.
    await expectValue(await patch(app, { webhook_id: hook.id, filter: { type: 'NEVER' } }));
    expect(await receiversOf(await publish(app, 'NEW_NFT', { x: 1 }), [hook.id])).toEqual([]);

    const test = await expectValue<{ event_id: string }>(
      (await postJson('test', { webhook_id: hook.id }, token)).res,
      202,
    );
    expect(await receiversOf(test.value.event_id, [hook.id])).toEqual([hook.id]);

    const resent = await expectValue<{ delivery_id: number }>(
      (await postJson('delivery/resend', { delivery_id: delivery }, token)).res,
      202,
    );
    expect(resent.value.delivery_id).toBeGreaterThan(Number(delivery));

    await deliverDue(hook.id);
    await endpointSql(
      hook.id,
      `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL WHERE delivery_id = CAST(?1 AS INTEGER)`,
      delivery as string,
    );
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const recovered = await expectValue<{ deliveries: number }>(
      (await postJson('recover', { webhook_id: hook.id, since }, token)).res,
      202,
    );
    expect(recovered.value.deliveries).toBeGreaterThanOrEqual(1);
    const [row] = await endpointSql<{ status: string }>(
      hook.id,
      'SELECT status FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER)',
      delivery as string,
    );
    expect(row?.status).toBe('pending');
  });
});
