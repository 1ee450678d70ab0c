// X-D1-Bookmark on the replies of requests that failed in D1. workerd's session has no bookmark
// after its first query failed (getBookmark() is null), so the Worker answers the bookmark the
// session started from, else the last one the isolate received, else one it asks D1 for.
// Module state is per test file: the first test here runs in an isolate that has no bookmark yet.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Fault, faultyDb, insertWebhook, OVERLOADED, snapshot } from './helpers/database';
import { expectCreateFail, expectDeleteFail, expectQueryFail, expectUpdateFail } from './helpers/replies';
import { fetchWith, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const BOOKMARK = /^[0-9a-f]+(-[0-9a-f]+)+$/;
const BROKEN = 'D1_ERROR: no such table: webhooks: SQLITE_ERROR';
const LOST = 'D1_ERROR: Network connection lost.';

type Op = 'PUT' | 'DELETE' | 'POST' | 'GET one' | 'GET list';

async function request(op: Op, id: string, db: D1Database, headers: Record<string, string> = {}) {
  const auth = { ...bearer(await tokenFor('bm-app')), ...headers };
  const json = { ...auth, 'content-type': 'application/json' };
  const req = {
    PUT: () =>
      new Request(URL_, { method: 'PUT', headers: json, body: JSON.stringify({ webhook_id: id, is_enabled: false }) }),
    DELETE: () => new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: auth }),
    POST: () =>
      new Request(URL_, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ url: 'https://hooks.example.com/bm' }),
      }),
    'GET one': () => new Request(`${URL_}?webhook_id=${id}`, { headers: auth }),
    'GET list': () => new Request(URL_, { headers: auth }),
  }[op]();
  return fetchWith({ DB: db }, req);
}

const expectFail: Record<Op, (res: Response, status: number) => Promise<void>> = {
  PUT: expectUpdateFail,
  DELETE: expectDeleteFail,
  POST: expectCreateFail,
  'GET one': expectQueryFail,
  'GET list': expectQueryFail,
};

describe('X-D1-Bookmark on a failure in D1', () => {
  it('asks D1 for one, once, when the isolate has none yet (this file’s first request)', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const id = await insertWebhook('bm-app', { enabled: true });
    const before = await snapshot();
    const { db, calls } = faultyDb([{ before: BROKEN }]);

    const res = await request('PUT', id, db);

    await expectUpdateFail(res, 500);
    expect(res.headers.get('x-d1-bookmark')).toMatch(BOOKMARK);
    expect(calls()).toBe(2); // the failed batch, and the SELECT 1 that got a bookmark
    expect(await snapshot()).toEqual(before);
  });

  describe.each<[string, Fault[], number, number]>([
    ['a storage error (500)', [{ before: BROKEN }], 500, 1],
    ['an overloaded database (503)', [{ before: OVERLOADED }], 503, 1],
    ['transient errors until the last attempt (503)', Array.from({ length: 4 }, () => ({ before: LOST })), 503, 4],
  ])('after %s', (_, faults, status, attempts) => {
    it.each<Op>(['PUT', 'DELETE', 'POST', 'GET one', 'GET list'])(
      'answers a %s with the isolate’s last bookmark, asking D1 nothing more, and changes nothing',
      async (op) => {
        vi.spyOn(console, 'error').mockImplementation(() => {});
        vi.spyOn(console, 'warn').mockImplementation(() => {});
        const id = await insertWebhook('bm-app', { enabled: true });
        // A request that succeeds: the isolate now holds the bookmark D1 gave it.
        const ok = await request('GET one', id, faultyDb([]).db);
        expect(ok.status).toBe(200);
        const before = await snapshot();
        const { db, calls } = faultyDb(faults);

        const res = await request(op, id, db);

        await expectFail[op](res, status);
        expect(res.headers.get('x-d1-bookmark')).toMatch(BOOKMARK);
        expect(res.headers.get('x-d1-bookmark')).toBe(ok.headers.get('x-d1-bookmark'));
        expect(calls()).toBe(attempts);
        expect(await snapshot()).toEqual(before);
      },
    );
  });

  it.each<Op>(['GET one', 'GET list'])(
    'answers a %s started from a client’s bookmark with that bookmark',
    async (op) => {
      vi.spyOn(console, 'error').mockImplementation(() => {});
      const id = await insertWebhook('bm-app');
      const bookmark = '00000000-00000001-00000000-00000000000000000000000000000000';
      const { db, calls } = faultyDb([{ before: BROKEN }]);

      const res = await request(op, id, db, { 'x-d1-bookmark': bookmark });

      await expectQueryFail(res, 500);
      expect(res.headers.get('x-d1-bookmark')).toBe(bookmark);
      expect(calls()).toBe(1);
    },
  );
});
