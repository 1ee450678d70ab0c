// A webhook's `filter` on POST and PATCH: checked against the grammar (400 naming the key, with
// the operation's code, nothing stored), stored and shown exactly as sent, null without one, a
// PATCH that changes it recorded; and POST /v1.0/app/nft/webhook/filter/test.
import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { auditRows, insertWebhook, snapshot } from './helpers/database';
import { applicationSql } from './helpers/objects';
import { expectEnvelope, expectValue } from './helpers/replies';
import { get, ORIGIN, post, postJson, registerWebhook, URL_ } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

const patch = (body: unknown, headers: Record<string, string>) =>
  SELF.fetch(URL_, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const storedFilter = async (id: string) =>
  (
    await env.DB.prepare('SELECT filter FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(id)
      .first<{ filter: string | null }>()
  )?.filter;

/** The `filter` of a reply's webhook, as its JSON text (the reply's own characters). */
const filterText = (text: string) => {
  const at = text.indexOf('"filter":');
  const start = at + '"filter":'.length;
  if (text.startsWith('null', start)) return null;
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    if (text[i] === '{') depth++;
    if (text[i] === '}' && --depth === 0) return text.slice(start, i + 1);
  }
  return undefined;
};

describe('filter on POST and PATCH', () => {
  it('is stored and shown exactly as sent: key order and the digits of every number', async () => {
    const app = freshApp();
    const sent =
      '{"data.price":{"$gte":100000000000000000000001,"$lt":1.50},"$or":[{"type":"NEW_NFT"},{"data.a":1e3}]}';
    const res = await post(`{"url":"https://${app}.example.com/a","filter":${sent}}`, bearer(await tokenFor(app)));
    const { text, value } = await expectValue<{ webhook_id: number }>(res, 201);
    expect(filterText(text)).toBe(sent);
    const id = String(value.webhook_id);
    expect(await storedFilter(id)).toBe(sent);
    // Every webhook object shows it: GET one, the list, PATCH's reply.
    const one = await expectValue(await get(`webhook_id=${id}`, bearer(await tokenFor(app))));
    expect(filterText(one.text)).toBe(sent);
    const list = await expectValue(await get(null, bearer(await tokenFor(app))));
    expect(filterText(list.text)).toBe(sent);
    const patched = await expectValue(await patch({ webhook_id: id, description: 'x' }, bearer(await tokenFor(app))));
    expect(filterText(patched.text)).toBe(sent);
  });

  it('a replay of a POST under its Idempotency-Key shows the filter exactly as first sent', async () => {
    const app = freshApp();
    const sent = '{"data.wei":{"$gte":"100000000000000000000"},"data.n":1.50,"data.m":1e3}';
    const body = `{"url":"https://${app}.example.com/a","filter":${sent}}`;
    const headers = { ...bearer(await tokenFor(app)), 'idempotency-key': 'filter-replay' };
    const first = await expectValue(await post(body, headers), 201);
    const replay = await post(body, headers);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const again = await expectValue(replay, 201);
    expect(filterText(first.text)).toBe(sent);
    expect(filterText(again.text)).toBe(sent);
  });

  it('is null for a webhook without one, and for a webhook stored before filters', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const legacy = await insertWebhook(app, { url: `https://${app}.example.com/legacy` });
    for (const hook of [id, legacy]) {
      const { value } = await expectValue<{ filter: unknown }>(
        await get(`webhook_id=${hook}`, bearer(await tokenFor(app))),
      );
      expect(value.filter).toBeNull();
      expect(Object.hasOwn(value, 'filter')).toBe(true);
    }
  });

  it.each([
    [{ 'data.price': { $gte: 'ten' } }, 'filter.data.price.$gte: must be a number or a string of decimal digits'],
    [{ $or: [{ 'data.a': 1 }, { 'data.b': { $regex: 'x' } }] }, 'filter.$or.1.data.b.$regex: is not an operator'],
    [{ owner: 'x' }, 'filter.owner: a path starts at the event object: data or type'],
    [[1], 'filter: must be a JSON object'],
    ['text', 'filter: must be a JSON object'],
    [{ 'data.x': { $in_set: false } }, 'filter.data.x.$in_set: must be true'],
  ])(
    'an invalid filter %j is 400 naming the key, with the operation code, and nothing stored',
    async (filter, detail) => {
      const app = freshApp();
      const { id } = await registerWebhook(app, { filter: { 'data.a': 1 } });
      const token = bearer(await tokenFor(app));
      const before = await snapshot();
      const created = await post({ url: `https://${app}.example.com/b`, filter }, token);
      expect(created.headers.get('x-error-detail')).toContain(detail);
      await expectEnvelope(created, 400, 64061, 'create fail');
      const patched = await patch({ webhook_id: id, filter }, token);
      expect(patched.headers.get('x-error-detail')).toContain(detail);
      await expectEnvelope(patched, 400, 64062, 'update fail');
      expect(await snapshot()).toEqual(before);
    },
  );

  it('a filter over 8 KiB is refused; one of 8 KiB fits in a POST body', async () => {
    const app = freshApp();
    const token = bearer(await tokenFor(app));
    const sized = (bytes: number) => {
      const head = '{"data.x":""}';
      return `{"data.x":"${'x'.repeat(bytes - head.length)}"}`;
    };
    const fits = await post(`{"url":"https://${app}.example.com/a","filter":${sized(8192)}}`, token);
    expect(filterText((await expectValue(fits, 201)).text)).toBe(sized(8192));
    const over = await post(`{"url":"https://${app}.example.com/b","filter":${sized(8193)}}`, token);
    expect(over.headers.get('x-error-detail')).toBe('filter: must be at most 8192 bytes of JSON');
    await expectEnvelope(over, 400, 64061, 'create fail');
  });

  it('a PATCH that changes the filter appends an update record with the row before; the same filter changes nothing', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app, { filter: { 'data.a': 1 } });
    const token = bearer(await tokenFor(app));
    await expectValue(await patch({ webhook_id: id, filter: { 'data.a': 2 } }, token));
    expect(await storedFilter(id)).toBe('{"data.a":2}');
    let audit = await auditRows(id);
    expect(audit.map((a) => a.action)).toEqual(['create', 'update']);
    expect(JSON.parse(audit[1]?.row_before as string).filter).toEqual({ 'data.a': 1 });
    // The same filter again: 200, nothing recorded.
    await expectValue(await patch({ webhook_id: id, filter: { 'data.a': 2 } }, token));
    audit = await auditRows(id);
    expect(audit).toHaveLength(2);
    // null removes it.
    const { value } = await expectValue<{ filter: unknown }>(await patch({ webhook_id: id, filter: null }, token));
    expect(value.filter).toBeNull();
    expect(await storedFilter(id)).toBeNull();
    expect((await auditRows(id)).map((a) => a.action)).toEqual(['create', 'update', 'update']);
  });
});

const FILTER_TEST = `${ORIGIN}/v1.0/app/nft/webhook/filter/test`;
const tryFilter = async (app: string, body: unknown, scope?: string) =>
  (await postJson('filter/test', body, bearer(await tokenFor(app, scope === undefined ? {} : { scope })))).res;
const event = (data: unknown, type = 'NEW_NFT') => ({ type, data });

describe('POST /v1.0/app/nft/webhook/filter/test', () => {
  it('answers whether the given filter matches the event', async () => {
    const app = freshApp();
    const filter = { 'data.price': { $gte: '1000000000000000000' } };
    const yes = await tryFilter(app, { filter, event: event({ price: '1000000000000000000' }) });
    expect((await expectValue(yes, 200, { usedD1: false })).value).toEqual({ matches: true });
    const no = await tryFilter(app, { filter, event: event({ price: '999999999999999999' }) });
    expect((await expectValue(no, 200, { usedD1: false })).value).toEqual({
      matches: false,
      why: { path: 'data.price', operator: '$gte', expected: '1000000000000000000', found: '999999999999999999' },
    });
    // Without a webhook there is no set: $in_set matches nothing.
    const set = await tryFilter(app, { filter: { 'data.a': { $in_set: true } }, event: event({ a: 'x' }) });
    expect((await expectValue(set, 200, { usedD1: false })).value).toEqual({
      matches: false,
      why: { path: 'data.a', operator: '$in_set', expected: true, found: 'x' },
    });
  });

  it("uses the webhook's own filter and value set, or the given filter with its set; stores and sends nothing", async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app, { filter: { 'data.owner': { $in_set: true } } });
    const token = bearer(await tokenFor(app));
    await expectValue(
      (await postJson('values', { webhook_id: id, add: ['0xAB00000000000000000000000000000000000000'] }, token)).res,
    );
    const plain = await registerWebhook(app, { url: `https://${app}.example.com/plain` });
    const before = await snapshot();
    const values = await applicationSql(app, 'SELECT * FROM webhook_values');
    const own = await tryFilter(app, {
      webhook_id: id,
      event: event({ owner: '0xab00000000000000000000000000000000000000' }),
    });
    expect((await expectValue(own)).value).toEqual({ matches: true });
    const other = await tryFilter(app, { webhook_id: id, event: event({ owner: '0xcd' }) });
    expect((await expectValue(other)).value).toEqual({
      matches: false,
      why: { path: 'data.owner', operator: '$in_set', expected: true, found: '0xcd' },
    });
    const given = await tryFilter(app, {
      webhook_id: Number(id),
      filter: { $not: { 'data.owner': { $in_set: true } } },
      event: event({ owner: '0xcd' }),
    });
    expect((await expectValue(given)).value).toEqual({ matches: true });
    // A webhook without a filter takes every event; so does `filter: null`.
    expect((await expectValue(await tryFilter(app, { webhook_id: plain.id, event: event({}) }))).value).toEqual({
      matches: true,
    });
    expect((await expectValue(await tryFilter(app, { webhook_id: id, filter: null, event: event({}) }))).value).toEqual(
      { matches: true },
    );
    expect(await snapshot()).toEqual(before);
    expect(await applicationSql(app, 'SELECT * FROM webhook_values')).toEqual(values);
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM events')).toEqual([{ n: 0 }]);
  });

  it('refuses bad input 400 with 64060, a foreign or missing webhook 404; a read-only token may try', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const foreign = await registerWebhook(freshApp());
    const cases: [unknown, string][] = [
      [{ event: event({}) }, 'filter or webhook_id is required'],
      [
        { filter: { 'data.a': { $gt: [] } }, event: event({}) },
        'filter.data.a.$gt: must be a number or a string of decimal digits',
      ],
      [{ filter: {} }, 'event is required'],
      [{ filter: {}, event: { type: 'NEW_NFT', data: [] } }, 'event.data must be a JSON object'],
      [{ filter: {}, event: { type: 'no spaces', data: {} } }, 'event.type must be 1 to 64 letters, digits, _ or .'],
      [{ webhook_id: 'x', event: event({}) }, 'webhook_id'],
    ];
    for (const [body, detail] of cases) {
      const res = await tryFilter(app, body);
      expect(res.headers.get('x-error-detail'), JSON.stringify(body)).toContain(detail);
      await expectEnvelope(res, 400, 64060, 'query fail');
    }
    for (const hook of [foreign.id, '987654321987']) {
      await expectEnvelope(await tryFilter(app, { webhook_id: hook, event: event({}) }), 404, 64060, 'query fail');
    }
    const readOnly = await tryFilter(app, { webhook_id: id, event: event({}) }, 'webhooks:read');
    expect((await expectValue(readOnly)).value).toEqual({ matches: true });
    const wrongMethod = await SELF.fetch(FILTER_TEST, { headers: bearer(await tokenFor(app)) });
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    await expectEnvelope(wrongMethod, 405, 405, 'method not allowed');
  });
});

describe('POST .../filter/test: why a filter does not match', () => {
  const DEAD = '0x000000000000000000000000000000000000dEaD';
  /** The trial's value for `filter` against an event of `data` (no webhook: no D1). */
  const trial = async (filter: unknown, data: unknown, type = 'NEW_NFT') => {
    const res = await tryFilter(freshApp(), { filter, event: event(data, type) });
    return (await expectValue<{ matches: boolean; why?: Record<string, unknown> }>(res, 200, { usedD1: false })).value;
  };
  const why = async (filter: unknown, data: unknown, type?: string) => {
    const value = await trial(filter, data, type);
    expect(value.matches).toBe(false);
    expect(Object.keys(value).sort()).toEqual(['matches', 'why']);
    return value.why;
  };

  it('a match has no why', async () => {
    expect(await trial({ 'data.a': 1 }, { a: 1 })).toEqual({ matches: true });
  });

  it('a bare scalar is $eq, its operand as written (an address in its own case)', async () => {
    expect(await why({ 'data.contract': DEAD }, { contract: '0xab' })).toEqual({
      path: 'data.contract',
      operator: '$eq',
      expected: DEAD,
      found: '0xab',
    });
    expect(await why({ type: 'MOD_NFT' }, {})).toEqual({
      path: 'type',
      operator: '$eq',
      expected: 'MOD_NFT',
      found: 'NEW_NFT',
    });
  });

  it.each([
    [{ $eq: 42 }, '42', 42],
    [{ $ne: null }, null, null],
    [{ $in: ['mint', 'sale'] }, 'burn', ['mint', 'sale']],
    [{ $nin: ['burn'] }, 'burn', ['burn']],
    [{ $gt: '1000' }, '1000', '1000'],
    [{ $gte: 10 }, 9.5, 10],
    [{ $lt: '1003' }, '1003', '1003'],
    [{ $lte: 20 }, '21', 20],
    [{ $exists: false }, 0, false],
    [{ $prefix: 'Dragon' }, 'dragon #7', 'Dragon'],
    [{ $in_set: true }, 'mbr_1', true],
    [{ $gt: 5 }, { n: 6 }, 5],
  ])('%j against %j: its operator, its operand and the value found', async (condition, v, expected) => {
    const [operator] = Object.keys(condition);
    expect(await why({ 'data.v': condition }, { v })).toEqual({ path: 'data.v', operator, expected, found: v });
  });

  it('a missing path has no found', async () => {
    const missing = await why({ 'data.owner': { $exists: true } }, { other: 1 });
    expect(missing).toEqual({ path: 'data.owner', operator: '$exists', expected: true });
    expect(Object.hasOwn(missing ?? {}, 'found')).toBe(false);
    expect(await why({ 'data.price': { $gte: '1' } }, {})).toEqual({
      path: 'data.price',
      operator: '$gte',
      expected: '1',
    });
  });

  it('the first condition in document order: keys in order, then the operators of a condition in order', async () => {
    const filter = { type: 'NEW_NFT', 'data.a': 1, 'data.b': 2 };
    expect(await why(filter, { a: 0, b: 0 })).toEqual({ path: 'data.a', operator: '$eq', expected: 1, found: 0 });
    expect(await why(filter, { a: 1, b: 0 })).toEqual({ path: 'data.b', operator: '$eq', expected: 2, found: 0 });
    const range = { 'data.n': { $gte: 1, $lt: 5 } };
    expect(await why(range, { n: 0 })).toEqual({ path: 'data.n', operator: '$gte', expected: 1, found: 0 });
    expect(await why(range, { n: 7 })).toEqual({ path: 'data.n', operator: '$lt', expected: 5, found: 7 });
  });

  it('$and: the first of its filters that does not match', async () => {
    const filter = { $and: [{ 'data.a': 1 }, { 'data.b': { $in: [2, 3] } }, { 'data.c': 4 }] };
    expect(await why(filter, { a: 1, b: 5, c: 0 })).toEqual({
      path: 'data.b',
      operator: '$in',
      expected: [2, 3],
      found: 5,
    });
  });

  it('$or: the why of its last filter', async () => {
    const filter = { $or: [{ 'data.a': 1 }, { 'data.b': { $gt: 2 }, 'data.c': 'x' }] };
    expect(await why(filter, { a: 0, b: 1 })).toEqual({ path: 'data.b', operator: '$gt', expected: 2, found: 1 });
    expect(await why(filter, { a: 0, b: 3 })).toEqual({ path: 'data.c', operator: '$eq', expected: 'x' });
  });

  it('$not: the operator $not, the path of its first key, its filter as the operand', async () => {
    const inner = { 'data.to': DEAD, 'data.x': 1 };
    expect(await why({ $not: inner }, { to: DEAD.toLowerCase(), x: 1 })).toEqual({
      path: 'data.to',
      operator: '$not',
      expected: inner,
      found: DEAD.toLowerCase(),
    });
    // Its first key a combination: the first path inside it.
    const nested = { $or: [{ 'data.kind': 'burn' }, { 'data.to': DEAD }] };
    expect(await why({ $not: nested }, { kind: 'burn' })).toEqual({
      path: 'data.kind',
      operator: '$not',
      expected: nested,
      found: 'burn',
    });
    // A missing path: no found; a filter without a path: path null.
    expect(await why({ $not: { 'data.memo': { $exists: false } } }, {})).toEqual({
      path: 'data.memo',
      operator: '$not',
      expected: { 'data.memo': { $exists: false } },
    });
    expect(await why({ $not: {} }, {})).toEqual({ path: null, operator: '$not', expected: {} });
  });

  it('a nested path is named as written, and the value found there is shown whatever it is', async () => {
    const data = { items: [{ id: 'a' }, { id: 'c', meta: { tags: ['x', 1] } }] };
    expect(await why({ 'data.items.1.id': 'b' }, data)).toEqual({
      path: 'data.items.1.id',
      operator: '$eq',
      expected: 'b',
      found: 'c',
    });
    expect(await why({ 'data.items.1.meta': { $exists: false } }, data)).toEqual({
      path: 'data.items.1.meta',
      operator: '$exists',
      expected: false,
      found: { tags: ['x', 1] },
    });
    expect(await why({ 'data.items.2.id': 'b' }, data)).toEqual({
      path: 'data.items.2.id',
      operator: '$eq',
      expected: 'b',
    });
  });

  it('$in_set with a webhook reads its value set; the why names the value it did not hold', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app, { filter: { type: 'MEMBER_NFT_ADD', 'data.to': { $in_set: true } } });
    const token = bearer(await tokenFor(app));
    await expectValue(
      (await postJson('values', { webhook_id: id, add: ['0xAB00000000000000000000000000000000000000'] }, token)).res,
    );
    const res = await tryFilter(app, { webhook_id: id, event: event({ to: '0xcd' }, 'MEMBER_NFT_ADD') });
    expect((await expectValue(res)).value).toEqual({
      matches: false,
      why: { path: 'data.to', operator: '$in_set', expected: true, found: '0xcd' },
    });
    const held = await tryFilter(app, {
      webhook_id: id,
      event: event({ to: '0xab00000000000000000000000000000000000000' }, 'MEMBER_NFT_ADD'),
    });
    expect((await expectValue(held)).value).toEqual({ matches: true });
  });

  it('operands and values keep the digits they were sent with', async () => {
    const res = await tryFilter(
      freshApp(),
      '{"filter":{"data.wei":{"$gte":100000000000000000000001}},"event":{"type":"NEW_NFT","data":{"wei":1.50}}}',
    );
    const { text } = await expectValue(res, 200, { usedD1: false });
    expect(text).toContain(
      '"value":{"matches":false,"why":{"path":"data.wei","operator":"$gte","expected":100000000000000000000001,"found":1.50}}',
    );
  });
});
