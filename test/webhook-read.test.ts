import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { countingDb, insertWebhook, snapshot, webhookRow } from './helpers/database';
import { expectQueryFail, expectSuccess, expectValue, type Webhook } from './helpers/replies';
import { del, fetchWith, get, post, put, URL_ } from './helpers/requests';
import { auth, bearer, freshApp, tokenFor } from './helpers/tokens';

interface Page {
  webhooks: Webhook[];
  next_cursor: string | null;
}

/** Every webhook id of the application, page by page, following next_cursor. */
async function allPages(app: string, query = '', between?: (page: number) => Promise<void>) {
  const headers = await auth(app);
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const q: string = [query, cursor === null ? '' : `cursor=${cursor}`].filter(Boolean).join('&');
    const { text, value }: { text: string; value: Page } = await expectValue<Page>(await get(q || null, headers));
    seen.push(...[...text.matchAll(/"webhook_id":(\d+)/g)].map((m) => m[1] as string));
    expect(value.webhooks.length).toBeGreaterThan(0);
    cursor = value.next_cursor;
    if (cursor === null) return seen;
    await between?.(page);
  }
  throw new Error('no last page');
}

describe('GET /v1.0/app/nft/webhook?webhook_id=N', () => {
  it('answers the caller’s webhook as value, exactly as stored', async () => {
    const app = freshApp();
    const id = await insertWebhook(app, { enabled: false, url: 'https://hooks.example.com/one' });
    const row = await webhookRow(id);

    const { value } = await expectValue<Webhook>(await get(`webhook_id=${id}`, await auth(app)));

    expect(value).toEqual({
      webhook_id: Number(id),
      url: 'https://hooks.example.com/one',
      destination: { type: 'http' },
      headers: {},
      is_enabled: false,
      event_types: null,
      description: null,
      rate_limit: null,
      filter: null,
      ordering: null,
      created_at: row?.created_at,
      updated_at: row?.updated_at,
      disabled_reason: null,
      disabled_at: null,
      failing_since: null,
    });
  });

  it('shows what POST registered and PUT changed', async () => {
    const app = freshApp();
    const headers = await auth(app);
    const created = await expectValue<Webhook>(await post({ url: 'https://hooks.example.com/flow' }, headers), 201);
    const id = created.value.webhook_id;
    // The same webhook, without the signing secret that only POST's 201 shows.
    const { secret, ...shown } = created.value as Webhook & { secret: string };
    expect(secret).toMatch(/^whsec_/);
    expect((await expectValue<Webhook>(await get(`webhook_id=${id}`, headers))).value).toEqual(shown);
    await expectSuccess(await put({ webhook_id: id, is_enabled: false }, headers));
    const after = (await expectValue<Webhook>(await get(`webhook_id=${id}`, headers))).value;
    expect(after.is_enabled).toBe(false);
    expect(after.updated_at >= created.value.updated_at).toBe(true);
  });

  it('answers a foreign, a missing and a deleted webhook with one identical 404', async () => {
    const app = freshApp();
    const headers = await auth(app);
    const foreign = await insertWebhook(freshApp());
    const deleted = await insertWebhook(app);
    await del(`webhook_id=${deleted}`, headers);

    const replies = await Promise.all([foreign, '987654321', deleted].map((id) => get(`webhook_id=${id}`, headers)));
    const shapes = await Promise.all(
      replies.map(async (r) => ({
        status: r.status,
        body: await r.text(),
        headers: [...r.headers.keys()].sort(),
        detail: r.headers.get('x-error-detail'),
      })),
    );
    expect(shapes[0]).toEqual(shapes[1]);
    expect(shapes[1]).toEqual(shapes[2]);
    await expectQueryFail(await get(`webhook_id=${foreign}`, headers), 404);
  });

  it.each([
    ['9007199254740993', '9007199254740992'],
    ['9223372036854775807', '9223372036854775806'],
  ])('writes id %s with its exact digits, not its neighbour', async (id, neighbour) => {
    const app = freshApp();
    await insertWebhook(app, { id: neighbour, url: 'https://hooks.example.com/n' });
    await insertWebhook(app, { id, url: 'https://hooks.example.com/x' });

    const one = await expectValue(await get(`webhook_id=${id}`, await auth(app)));
    expect(one.text).toContain(`"webhook_id":${id},"url":"https://hooks.example.com/x"`);
    const list = await expectValue(await get(null, await auth(app)));
    expect(list.text).toContain(`"webhook_id":${neighbour},"url":"https://hooks.example.com/n"`);
    expect(list.text).toContain(`"webhook_id":${id},"url":"https://hooks.example.com/x"`);
    // Ids this high exhaust AUTOINCREMENT: give the other tests of this file their database back.
    await env.DB.batch([
      env.DB.prepare('DELETE FROM webhooks WHERE app_id = ?1').bind(app),
      env.DB.prepare(
        `UPDATE sqlite_sequence SET seq = (SELECT COALESCE(MAX(webhook_id), 0) FROM webhooks) WHERE name = 'webhooks'`,
      ),
    ]);
  });

  it('ignores the list parameters, even invalid ones, when webhook_id is given', async () => {
    const app = freshApp();
    const id = await insertWebhook(app);
    await expectValue(await get(`limit=0&cursor=%%%&is_enabled=maybe&webhook_id=${id}`, await auth(app)));
  });

  it.each([
    ['empty', 'webhook_id='],
    ['repeated', 'webhook_id=5&webhook_id=5'],
    ['negative', 'webhook_id=-5'],
    ['zero', 'webhook_id=0'],
    ['a fraction', 'webhook_id=5.0'],
    ['an exponent', 'webhook_id=5e2'],
    ['hex', 'webhook_id=0x10'],
    ['a space', 'webhook_id=%205'],
    ['2^63', 'webhook_id=9223372036854775808'],
    ['letters', 'webhook_id=abc'],
  ])('answers 400 for a webhook_id that is %s', async (_, query) => {
    await expectQueryFail(await get(query, await auth(freshApp())), 400);
  });

  it('uses one D1 round trip, found or not, and none for input it rejects', async () => {
    const app = freshApp();
    const id = await insertWebhook(app);
    const token = await tokenFor(app);
    for (const [query, calls] of [
      [`webhook_id=${id}`, 1],
      ['webhook_id=777777', 1],
      ['', 1],
      ['limit=5&is_enabled=true', 1],
      ['webhook_id=x', 0],
      ['limit=0', 0],
    ] as const) {
      const counting = countingDb(env.DB);
      await fetchWith({ DB: counting.db }, new Request(`${URL_}?${query}`, { headers: bearer(token) }));
      expect(counting.calls(), query).toBe(calls);
    }
  });

  it('answers HEAD with 405, like any method the path does not allow', async () => {
    const res = await SELF.fetch(URL_, { method: 'HEAD', headers: await auth(freshApp()) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('DELETE, GET, PATCH, POST, PUT');
  });
});

describe('GET /v1.0/app/nft/webhook (list)', () => {
  it('lists the caller’s webhooks oldest first, 20 to a page by default, and no one else’s', async () => {
    const app = freshApp();
    const other = freshApp();
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) {
      ids.push(await insertWebhook(app, { url: `https://hooks.example.com/${i}` }));
      await insertWebhook(other, { url: `https://hooks.example.com/${i}` });
    }
    const headers = await auth(app);

    const first = await expectValue<Page>(await get(null, headers));
    expect(first.value.webhooks.map((w) => String(w.webhook_id))).toEqual(ids.slice(0, 20));
    expect(first.value.next_cursor).toEqual(expect.any(String));
    const second = await expectValue<Page>(await get(`cursor=${first.value.next_cursor}`, headers));
    expect(second.value.webhooks.map((w) => String(w.webhook_id))).toEqual(ids.slice(20));
    expect(second.value.next_cursor).toBeNull();
  });

  it('answers an empty page, with next_cursor null, for an application without webhooks', async () => {
    const { text } = await expectValue(await get(null, await auth(freshApp())));
    expect(text).toBe('{"return":0,"message":"success","value":{"webhooks":[],"next_cursor":null}}');
  });

  it('gives next_cursor null when the last page is exactly full', async () => {
    const app = freshApp();
    for (let i = 0; i < 4; i++) await insertWebhook(app, { url: `https://hooks.example.com/${i}` });
    const page = await expectValue<Page>(await get('limit=4', await auth(app)));
    expect(page.value.webhooks).toHaveLength(4);
    expect(page.value.next_cursor).toBeNull();
  });

  it('honours limit from 1 to 100', async () => {
    const app = freshApp();
    for (let i = 0; i < 101; i++) await insertWebhook(app, { url: `https://hooks.example.com/${i}` });
    const headers = await auth(app);
    expect((await expectValue<Page>(await get('limit=1', headers))).value.webhooks).toHaveLength(1);
    expect((await expectValue<Page>(await get('limit=100', headers))).value.webhooks).toHaveLength(100);
    expect(await allPages(app, 'limit=7')).toHaveLength(101);
  });

  it('filters by is_enabled, across pages', async () => {
    const app = freshApp();
    const enabled: string[] = [];
    for (let i = 0; i < 9; i++) {
      const id = await insertWebhook(app, { enabled: i % 3 === 0, url: `https://hooks.example.com/${i}` });
      if (i % 3 === 0) enabled.push(id);
    }
    expect(await allPages(app, 'is_enabled=true&limit=2')).toEqual(enabled);
    expect(await allPages(app, 'is_enabled=false&limit=2')).toHaveLength(6);
  });

  it('never repeats or skips a webhook while others are created and deleted between pages', async () => {
    const app = freshApp();
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await insertWebhook(app, { url: `https://hooks.example.com/${i}` }));
    const headers = await auth(app);
    const deleted = new Set<string>();
    const created: string[] = [];

    const seen = await allPages(app, 'limit=3', async (page) => {
      // Delete one already seen and one not yet seen; create a new one (it comes last).
      for (const id of [ids[page * 3] as string, ids[page * 3 + 4] as string]) {
        if (id !== undefined && !deleted.has(id)) {
          await expectSuccess(await del(`webhook_id=${id}`, headers));
          deleted.add(id);
        }
      }
      const { value } = await expectValue<Webhook>(
        await post({ url: `https://hooks.example.com/new-${page}` }, headers),
        201,
      );
      created.push(String(value.webhook_id));
    });

    expect(new Set(seen).size).toBe(seen.length);
    // Every webhook that lived through the whole listing was seen, in ascending order.
    const survivors = [...ids, ...created].filter((id) => !deleted.has(id));
    for (const id of survivors) expect(seen).toContain(id);
    expect(seen).toEqual([...seen].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)));
  });

  it('changes nothing', async () => {
    const app = freshApp();
    await insertWebhook(app);
    const before = await snapshot();
    await expectValue(await get(null, await auth(app)));
    expect(await snapshot()).toEqual(before);
  });

  it.each([
    ['limit 0', 'limit=0'],
    ['limit 101', 'limit=101'],
    ['limit empty', 'limit='],
    ['limit negative', 'limit=-1'],
    ['limit a fraction', 'limit=2.0'],
    ['limit letters', 'limit=ten'],
    ['limit repeated', 'limit=2&limit=2'],
    ['cursor empty', 'cursor='],
    ['cursor garbage', 'cursor=abc'],
    ['cursor not base64url', 'cursor=%%%'],
    ['cursor a bare id', 'cursor=5'],
    ['cursor of another form', `cursor=${btoa('w1:-5')}`],
    ['cursor with padding', `cursor=${btoa('w1:5')}=`],
    ['cursor repeated', 'cursor=dzE6NQ&cursor=dzE6NQ'],
    ['is_enabled 1', 'is_enabled=1'],
    ['is_enabled TRUE', 'is_enabled=TRUE'],
    ['is_enabled empty', 'is_enabled='],
    ['is_enabled repeated', 'is_enabled=true&is_enabled=true'],
  ])('answers 400 for %s', async (_, query) => {
    await expectQueryFail(await get(query, await auth(freshApp())), 400);
  });

  it('ignores unknown parameters', async () => {
    await expectValue(await get('page=2&sort=desc&foo', await auth(freshApp())));
  });
});

describe('X-D1-Bookmark (D1 Sessions API)', () => {
  it('is on every reply that used D1: GET, POST, PUT, DELETE, found or not', async () => {
    const app = freshApp();
    const headers = await auth(app);
    const id = await insertWebhook(app);
    const replies = [
      await get(null, headers),
      await get('webhook_id=424242', headers),
      await post({ url: 'https://hooks.example.com/bm' }, headers),
      await put({ webhook_id: id, is_enabled: false }, headers),
      await put({ webhook_id: '424242', is_enabled: false }, headers),
      await del(`webhook_id=${id}`, headers),
      await del('webhook_id=424242', headers),
    ];
    for (const res of replies) expect(res.headers.get('x-d1-bookmark')).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
  });

  it('is not on replies that never reached D1', async () => {
    const res = await get('limit=0', await auth(freshApp()));
    expect(res.headers.get('x-d1-bookmark')).toBeNull();
    expect((await get(null, { authorization: 'Bearer a.b.c' })).headers.get('x-d1-bookmark')).toBeNull();
  });

  it('lets a client read its own write with the bookmark the write returned', async () => {
    const app = freshApp();
    const headers = await auth(app);
    const created = await post({ url: 'https://hooks.example.com/ryow' }, headers);
    const { value } = await expectValue<Webhook>(created, 201);
    const bookmark = created.headers.get('x-d1-bookmark') as string;

    const res = await get(`webhook_id=${value.webhook_id}`, { ...headers, 'x-d1-bookmark': bookmark });
    await expectValue(res);
    // The session moved on from the bookmark it started at, never back.
    expect((res.headers.get('x-d1-bookmark') as string) >= bookmark).toBe(true);
  });

  it('starts the read at the client’s bookmark', async () => {
    const app = freshApp();
    const sessions: string[] = [];
    const db = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === 'withSession') {
          return (start: string) => {
            sessions.push(start);
            return target.withSession(start);
          };
        }
        const value = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const bookmark = '00000000-00000001-00000000-00000000000000000000000000000000';
    const token = await tokenFor(app);
    await fetchWith({ DB: db }, new Request(URL_, { headers: { ...bearer(token), 'x-d1-bookmark': bookmark } }));
    await fetchWith({ DB: db }, new Request(URL_, { headers: bearer(token) }));
    await fetchWith(
      { DB: db },
      new Request(`${URL_}?webhook_id=1`, {
        method: 'DELETE',
        headers: { ...bearer(token), 'x-d1-bookmark': bookmark },
      }),
    );
    expect(sessions).toEqual([bookmark, 'first-unconstrained', 'first-primary']);
  });

  it.each([
    ['first-primary', 'first-primary'],
    ['first-unconstrained', 'first-unconstrained'],
    ['one group', '0000002c'],
    ['not hex', '0000002g-00000002'],
    ['empty groups', '0000002c--00000002'],
    ['a trailing dash', '0000002c-'],
    ['spaces', '0000002c-0000 0002'],
    ['over 128 characters', `0-${'a'.repeat(127)}`],
    ['empty', ''],
  ])('answers a GET 400 for a bookmark that is %s', async (_, value) => {
    const headers = { ...(await auth(freshApp())), 'x-d1-bookmark': value };
    await expectQueryFail(await get(null, headers), 400);
    await expectQueryFail(await get('webhook_id=1', headers), 400);
  });

  it('accepts a bookmark of 128 characters', async () => {
    const bookmark = `0-${'a'.repeat(126)}`;
    await expectValue(await get(null, { ...(await auth(freshApp())), 'x-d1-bookmark': bookmark }));
  });

  it('is ignored by writes, even when malformed', async () => {
    const app = freshApp();
    const headers = { ...(await auth(app)), 'x-d1-bookmark': 'first-primary' };
    const id = await insertWebhook(app);
    await expectSuccess(await put({ webhook_id: id, is_enabled: false }, headers));
    await expectValue(await post({ url: 'https://hooks.example.com/w' }, headers), 201);
    await expectSuccess(await del(`webhook_id=${id}`, headers));
  });
});
