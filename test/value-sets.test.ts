// Value sets: POST /v1.0/app/nft/webhook/values adds and removes (1,000 values a call, 100,000 a
// set, 409 past it with nothing changed), GET pages through them; the webhook must be the
// caller's; a deleted webhook's set is deleted; an Application object from before sets upgrades.
import { env, evictDurableObject, runInDurableObject, SELF } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { APPLICATION_SCHEMA } from '../src/events/store/schema';
import { applicationOf, applicationSql, deliveriesOfEvent } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectEnvelope, expectSuccess, expectValue } from './helpers/replies';
import { del, eventRequest, fetchAndWait, ORIGIN, postJson, registerWebhook } from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const VALUES_URL = `${ORIGIN}/v1.0/app/nft/webhook/values`;

const change = async (app: string, body: unknown, claims: Record<string, unknown> = {}) =>
  (await postJson('values', body, bearer(await tokenFor(app, claims)))).res;

const page = async (app: string, query: string, claims: Record<string, unknown> = {}) =>
  fetchAndWait({}, new Request(`${VALUES_URL}?${query}`, { headers: bearer(await tokenFor(app, claims)) }));

interface ValuesPage {
  webhook_id: number;
  values: string[];
  count: number;
  next_cursor: string | null;
}

/** Every value of the set, through every page of `limit`. */
async function allValues(app: string, webhookId: string, limit: number): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const query: string = `webhook_id=${webhookId}&limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`;
    const { value }: { value: ValuesPage } = await expectValue<ValuesPage>(await page(app, query));
    pages.push(value.values);
    cursor = value.next_cursor;
  } while (cursor !== null);
  return pages;
}

const storedValues = async (app: string, webhookId: string) =>
  (
    await applicationSql<{ value: string }>(
      app,
      'SELECT value FROM webhook_values WHERE webhook_id = ?1 ORDER BY value',
      webhookId,
    )
  ).map((r) => r.value);

describe('POST /v1.0/app/nft/webhook/values', () => {
  it('adds and removes values, answers the count; a present value added or an absent one removed changes nothing', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const address = '0xAbCdEf0000000000000000000000000000000001';
    const added = await change(app, { webhook_id: id, add: ['b', 'a', address, 'a'] });
    expect((await expectValue(added)).value).toEqual({ webhook_id: Number(id), count: 3 });
    // Addresses are stored lower-cased: the same address in another case is the same value.
    expect(await storedValues(app, id)).toEqual([address.toLowerCase(), 'a', 'b']);
    const again = await change(app, { webhook_id: Number(id), add: ['a', address.toUpperCase().replace('0X', '0x')] });
    expect((await expectValue(again)).value).toEqual({ webhook_id: Number(id), count: 3 });
    const removed = await change(app, { webhook_id: id, remove: ['a', 'zzz', address] });
    expect((await expectValue(removed)).value).toEqual({ webhook_id: Number(id), count: 1 });
    expect(await storedValues(app, id)).toEqual(['b']);
    // Neither add nor remove: the count.
    expect((await expectValue(await change(app, { webhook_id: id }))).value).toEqual({
      webhook_id: Number(id),
      count: 1,
    });
  });

  it('refuses bad input 400 with 64062 and changes nothing', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    await expectValue(await change(app, { webhook_id: id, add: ['kept'] }));
    const cases: [unknown, string][] = [
      [{ add: ['x'] }, 'webhook_id is required'],
      [{ webhook_id: id, add: 'x' }, 'add must be an array of strings'],
      [{ webhook_id: id, add: [''] }, 'add.0 must be a string of 1 to 256 characters'],
      [{ webhook_id: id, remove: ['ok', 'x'.repeat(257)] }, 'remove.1 must be a string of 1 to 256 characters'],
      [{ webhook_id: id, add: [1] }, 'add.0 must be a string of 1 to 256 characters'],
      [{ webhook_id: id, add: ['ok', '\ud800'] }, 'add.1 must be well-formed Unicode'],
      [
        {
          webhook_id: id,
          add: Array.from({ length: 600 }, (_, i) => `a${i}`),
          remove: Array.from({ length: 401 }, (_, i) => `r${i}`),
        },
        'add and remove hold at most 1000 values together',
      ],
      [{ webhook_id: id, add: ['x'], remove: ['x'] }, 'a value is both in add and in remove'],
    ];
    for (const [body, detail] of cases) {
      const res = await change(app, body);
      expect(res.headers.get('x-error-detail'), JSON.stringify(body).slice(0, 80)).toBe(detail);
      await expectEnvelope(res, 400, 64062, 'update fail');
    }
    // 256 characters is a value; 1,000 values in one call are taken.
    const many = Array.from({ length: 999 }, (_, i) => `v${String(i).padStart(4, '0')}`);
    const ok = await change(app, { webhook_id: id, add: [...many, 'y'.repeat(256)] });
    expect((await expectValue(ok)).value).toEqual({ webhook_id: Number(id), count: 1001 });
  });

  it('past 100,000 values is 409 with 64062 and nothing changed', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    // A set of 99,999 values, written in the object as 100 calls would.
    await runInDurableObject(applicationOf(app), (_i, state) => {
      const { sql } = state.storage;
      sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 99999)
         INSERT INTO webhook_values (webhook_id, value) SELECT ?1, 'v' || i FROM n`,
        id,
      );
      sql.exec('INSERT INTO value_counts (webhook_id, count) VALUES (?1, 99999)', id);
    });
    const full = await change(app, { webhook_id: id, add: ['new-1', 'new-2'] });
    expect(full.headers.get('x-error-detail')).toBe('a value set holds at most 100000 values');
    await expectEnvelope(full, 409, 64062, 'update fail');
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM webhook_values WHERE webhook_id = ?1', id)).toEqual([
      { n: 99999 },
    ]);
    expect(await applicationSql(app, "SELECT value FROM webhook_values WHERE value LIKE 'new-%'")).toEqual([]);
    // One more fits (100,000); a lookup in the full set finds a value.
    expect((await expectValue(await change(app, { webhook_id: id, add: ['new-1', 'v5'] }))).value).toEqual({
      webhook_id: Number(id),
      count: 100000,
    });
    await expectEnvelope(await change(app, { webhook_id: id, add: ['new-2'] }), 409, 64062, 'update fail');
  });

  it('a foreign or missing webhook is 404; a read-only token is 403; other methods 405', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const other = freshApp();
    const foreign = await registerWebhook(other);
    await expectValue(await change(other, { webhook_id: foreign.id, add: ['theirs'] }));
    await expectEnvelope(await change(app, { webhook_id: foreign.id, add: ['x'] }), 404, 64062, 'update fail');
    await expectEnvelope(await change(app, { webhook_id: '987654321987', add: ['x'] }), 404, 64062, 'update fail');
    await expectEnvelope(await page(app, `webhook_id=${foreign.id}`), 404, 64060, 'query fail');
    expect(await storedValues(other, foreign.id)).toEqual(['theirs']);
    expect(await applicationSql(app, 'SELECT * FROM webhook_values')).toEqual([]);
    const readOnly = await change(app, { webhook_id: id, add: ['x'] }, { scope: 'webhooks:read' });
    expect(readOnly.headers.get('www-authenticate')).toContain('insufficient_scope');
    await expectEnvelope(readOnly, 403, 64062, 'update fail');
    expect(await storedValues(app, id)).toEqual([]);
    // A read-only token reads the set.
    expect((await expectValue(await page(app, `webhook_id=${id}`, { scope: 'webhooks:read' }))).value).toEqual({
      webhook_id: Number(id),
      values: [],
      count: 0,
      next_cursor: null,
    });
    const put = await SELF.fetch(VALUES_URL, { method: 'PUT', headers: bearer(await tokenFor(app)) });
    expect(put.headers.get('allow')).toBe('GET, POST');
    await expectEnvelope(put, 405, 405, 'method not allowed');
  });
});

describe('GET /v1.0/app/nft/webhook/values', () => {
  it('pages through the set in order with keyset cursors, each value once, with the count', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const values = ['a', 'b', 'c', 'ü', 'd', 'e', 'x'.repeat(256)];
    await expectValue(await change(app, { webhook_id: id, add: values }));
    const pages = await allValues(app, id, 3);
    expect(pages).toEqual([['a', 'b', 'c'], ['d', 'e', 'x'.repeat(256)], ['ü']]);
    const first = await expectValue<ValuesPage>(await page(app, `webhook_id=${id}&limit=3`));
    expect(first.value.count).toBe(7);
    // A value added before the cursor's position does not repeat a page; one after it shows.
    await expectValue(await change(app, { webhook_id: id, add: ['0', 'f'] }));
    const second = await expectValue<ValuesPage>(
      await page(app, `webhook_id=${id}&limit=3&cursor=${first.value.next_cursor}`),
    );
    expect(second.value).toMatchObject({ values: ['d', 'e', 'f'], count: 9 });
    // The default page is 20.
    expect((await expectValue<ValuesPage>(await page(app, `webhook_id=${id}`))).value.values).toHaveLength(9);
  });

  it('refuses a bad query 400 with 64060', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const cases: [string, string][] = [
      ['', 'webhook_id query parameter is required'],
      [`webhook_id=${id}&limit=0`, 'limit must be a whole number from 1 to 100'],
      [`webhook_id=${id}&cursor=bm90IGEgY3Vyc29y`, 'cursor is not a next_cursor this API issued'],
      [`webhook_id=${id}&cursor=dzE6MQ`, 'cursor is not a next_cursor this API issued'],
    ];
    for (const [query, detail] of cases) {
      const res = await page(app, query);
      expect(res.headers.get('x-error-detail'), query).toBe(detail);
      await expectEnvelope(res, 400, 64060, 'query fail');
    }
  });
});

describe('deleting a webhook', () => {
  it('deletes its value set; DELETE answers as before; other sets stay', async () => {
    const app = freshApp();
    const gone = await registerWebhook(app);
    const kept = await registerWebhook(app, { url: `https://${app}.example.com/kept` });
    await expectValue(await change(app, { webhook_id: gone.id, add: ['a', 'b'] }));
    await expectValue(await change(app, { webhook_id: kept.id, add: ['a'] }));
    const res = await del(`webhook_id=${gone.id}`, bearer(await tokenFor(app)));
    await expectSuccess(res);
    expect(await storedValues(app, gone.id)).toEqual([]);
    expect(await applicationSql(app, 'SELECT webhook_id, count FROM value_counts')).toEqual([
      { webhook_id: kept.id, count: 1 },
    ]);
    await expectEnvelope(await page(app, `webhook_id=${gone.id}`), 404, 64060, 'query fail');
    expect(await storedValues(app, kept.id)).toEqual(['a']);
  });

  it("answers DELETE's success even when the application's object fails; the set is left unread", async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    await expectValue(await change(app, { webhook_id: hook.id, add: ['a'] }));
    const failing = {
      getByName: () => ({
        webhookChanged: () => Promise.reject(new Error('object down')),
      }),
    };
    const res = await fetchAndWait(
      { APPLICATIONS: failing },
      new Request(`${ORIGIN}/v1.0/app/nft/webhook?webhook_id=${hook.id}`, {
        method: 'DELETE',
        headers: bearer(await tokenFor(app)),
      }),
    );
    await expectSuccess(res);
    expect(await env.DB.prepare('SELECT 1 FROM webhooks WHERE webhook_id = ?1').bind(hook.id).first()).toBeNull();
  });
});

describe('an Application object from before value sets', () => {
  it('upgrades to the step that adds them, keeping its events, and filters with them after', async () => {
    const app = freshApp();
    receiver(() => new Response('ok'));
    const hook = await registerWebhook(app, { filter: { 'data.who': { $in_set: true } } });
    const stub = applicationOf(app);
    // The object as the release before value sets left it: version 2 of its schema (without what
    // steps 3 and 4 add), one event.
    await runInDurableObject(stub, (_i, state) => {
      const { sql } = state.storage;
      sql.exec('DROP TABLE webhook_values');
      sql.exec('DROP TABLE value_counts');
      // And without what later steps made.
      sql.exec('DROP TABLE dedupe');
      sql.exec('DROP TABLE journeys');
      sql.exec('DROP TABLE endpoints');
      sql.exec('CREATE TABLE endpoints (webhook_id TEXT PRIMARY KEY) WITHOUT ROWID');
      sql.exec('DELETE FROM schema_version');
      sql.exec('INSERT INTO schema_version (version) VALUES (2)');
      sql.exec(
        `INSERT INTO events (event_id, source_key, created_at) VALUES ('evt_old', 'id:old', '2026-01-01T00:00:00.000Z')`,
      );
    });
    await evictDurableObject(stub);
    expect(await applicationSql(app, 'SELECT version FROM schema_version')).toEqual([
      { version: APPLICATION_SCHEMA.length },
    ]);
    // Value sets are step 3; later steps run after it.
    expect(APPLICATION_SCHEMA.length).toBeGreaterThanOrEqual(3);
    expect(await applicationSql(app, 'SELECT event_id FROM events')).toEqual([{ event_id: 'evt_old' }]);
    await expectValue(await change(app, { webhook_id: hook.id, add: ['ann'] }));
    const publish = async (who: string) =>
      (
        await expectValue<{ event_id: string }>(
          await fetchAndWait(
            {},
            eventRequest({ app_id: app, type: 'NEW_NFT', data: { who } }, bearer(await platformToken())),
          ),
          202,
        )
      ).value.event_id;
    expect(await deliveriesOfEvent(hook.id, await publish('ann'))).toHaveLength(1);
    expect(await deliveriesOfEvent(hook.id, await publish('bob'))).toHaveLength(0);
  });
});
