import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { auditRows, faultyDb, holdBookmark, insertWebhook, OVERLOADED, snapshot, webhookRow } from './helpers/database';
import { expectDeleteFail, expectSuccess, expectUpdateFail } from './helpers/replies';
import { fetchWith, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

beforeAll(holdBookmark);

afterEach(() => {
  vi.restoreAllMocks();
});

const TRANSIENT = [
  'D1_ERROR: Network connection lost.',
  'D1_ERROR: Internal error in D1 DB storage caused object to be reset.',
  'D1_ERROR: D1 DB reset because its code was updated.',
  'D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.',
  'D1_ERROR: database is locked: SQLITE_BUSY',
];

async function request(op: 'PUT' | 'DELETE', id: string, db: D1Database, state = false) {
  const token = await tokenFor('app-a');
  return op === 'DELETE'
    ? fetchWith({ DB: db }, new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(token) }))
    : fetchWith(
        { DB: db },
        new Request(URL_, {
          method: 'PUT',
          headers: { ...bearer(token), 'content-type': 'application/json' },
          body: JSON.stringify({ webhook_id: id, is_enabled: state }),
        }),
      );
}

/** The `d1_attempts` of the request log line. */
function loggedAttempts(info: { mock: { calls: unknown[][] } }): number[] {
  return info.mock.calls
    .map((c) => JSON.parse(String(c[0])) as { msg: string; d1_attempts: number })
    .filter((l) => l.msg === 'request')
    .map((l) => l.d1_attempts);
}

describe('D1 failures', () => {
  describe.each(TRANSIENT)('transient error "%s"', (message) => {
    it('retries a DELETE and succeeds, with one audit record', async () => {
      vi.spyOn(console, 'warn').mockImplementation(() => {});
      const info = vi.spyOn(console, 'info').mockImplementation(() => {});
      const id = await insertWebhook('app-a');
      const { db, calls } = faultyDb([{ before: message }]);

      await expectSuccess(await request('DELETE', id, db));

      expect(calls()).toBe(2);
      expect(loggedAttempts(info)).toEqual([2]);
      expect(await webhookRow(id)).toBeNull();
      expect(await auditRows(id)).toHaveLength(1);
    });

    it('retries a PUT and succeeds, with one audit record', async () => {
      vi.spyOn(console, 'warn').mockImplementation(() => {});
      const id = await insertWebhook('app-a', { enabled: true });
      const { db, calls } = faultyDb([{ before: message }, { before: message }]);

      await expectSuccess(await request('PUT', id, db));

      expect(calls()).toBe(3);
      expect((await webhookRow(id))?.is_enabled).toBe(0);
      expect(await auditRows(id)).toHaveLength(1);
    });
  });

  it.each(['PUT', 'DELETE'] as const)(
    'never writes a second audit record when a %s committed but its reply was lost',
    async (op) => {
      vi.spyOn(console, 'warn').mockImplementation(() => {});
      const id = await insertWebhook('app-a', { enabled: true });
      const { db, calls } = faultyDb([{ after: 'D1_ERROR: Network connection lost.' }]);

      await expectSuccess(await request(op, id, db));

      expect(calls()).toBe(2);
      expect(await auditRows(id)).toHaveLength(1);
      if (op === 'DELETE') expect(await webhookRow(id)).toBeNull();
      else expect((await webhookRow(id))?.is_enabled).toBe(0);
    },
  );

  it.each(['PUT', 'DELETE'] as const)(
    'gives up on a %s after the last attempt: 503 with Retry-After, nothing written',
    async (op) => {
      vi.spyOn(console, 'warn').mockImplementation(() => {});
      const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
      const id = await insertWebhook('app-a', { enabled: true });
      const before = await snapshot();
      const { db, calls } = faultyDb(Array.from({ length: 10 }, () => ({ before: TRANSIENT[0] as string })));

      const res = await request(op, id, db);

      expect(res.headers.get('retry-after')).toBe('2');
      expect(res.headers.get('x-error-detail')).toBeNull();
      expect(res.headers.get('x-error-detail')).toBeNull();
      if (op === 'DELETE') await expectDeleteFail(res, 503);
      else await expectUpdateFail(res, 503);
      expect(calls()).toBe(4);
      expect(await snapshot()).toEqual(before);
      expect(errors.mock.calls.some((c) => String(c[0]).includes('Network connection lost'))).toBe(true);
    },
  );

  it('does not retry an overloaded database: 503 with Retry-After at once', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const id = await insertWebhook('app-a');
    const before = await snapshot();
    const { db, calls } = faultyDb([{ before: OVERLOADED }]);

    const res = await request('DELETE', id, db);

    expect(res.headers.get('retry-after')).toBe('2');
    expect(res.headers.get('x-error-detail')).toBeNull();
    await expectDeleteFail(res, 503);
    expect(calls()).toBe(1);
    expect(await snapshot()).toEqual(before);
  });

  it.each(['D1_ERROR: no such table: webhooks: SQLITE_ERROR', 'D1_ERROR: CHECK constraint failed: SQLITE_CONSTRAINT'])(
    'answers 500 for a non-transient error (%s), without retrying',
    async (message) => {
      vi.spyOn(console, 'error').mockImplementation(() => {});
      const id = await insertWebhook('app-a', { enabled: true });
      const before = await snapshot();
      const { db, calls } = faultyDb([{ before: message }]);

      const res = await request('PUT', id, db);

      await expectUpdateFail(res, 500);
      expect(res.headers.get('retry-after')).toBeNull();
      expect(res.headers.get('x-error-detail')).toBeNull();
      expect(calls()).toBe(1);
      expect(await snapshot()).toEqual(before);
    },
  );

  it('retries the read of a PUT without is_enabled', async () => {
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    const id = await insertWebhook('app-a');
    const { db, calls } = faultyDb([{ before: TRANSIENT[2] as string }]);
    const res = await fetchWith(
      { DB: db },
      new Request(URL_, {
        method: 'PUT',
        headers: { ...bearer(await tokenFor('app-a')), 'content-type': 'application/json' },
        body: JSON.stringify({ webhook_id: id }),
      }),
    );
    await expectSuccess(res);
    expect(calls()).toBe(2);
  });
});
