// Hot and cold: deliveries that ended move from the endpoint's object to R2 (HISTORY) from its
// alarm, and read exactly as they did hot: the log's pages (filters, order, cursors spanning hot
// and archived), one delivery with every attempt, the stats; recovery and resend send them with
// their original body and webhook-id. A failed write to R2 leaves them hot; retention deletes
// them, rows and objects.
import { env, evictDurableObject, runInDurableObject } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ARCHIVE_BATCH, purgeArchive } from '../src/deliveries/archive';
import { ENDPOINT_SCHEMA } from '../src/deliveries/store/schema';
import { alarmWith, deliverDue, endpointOf, endpointSql, makeDue, storedDelivery } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { fetchAndWait, ORIGIN, postJson, publishEvent, readLog, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const HOT = { HISTORY_HOT_SECONDS: '1' };
/** The delivery ids of a reply, with their exact digits. */
const idsIn = (text: string) => [...text.matchAll(/"delivery_id":(\d+)/g)].map((m) => m[1] as string);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Archives what ended more than a second ago: waits that second, then rings the alarm. */
async function archive(webhookId: string, settings: Record<string, unknown> = {}): Promise<void> {
  await sleep(1100);
  await alarmWith(webhookId, { ...HOT, ...settings });
}

/** The R2 objects of the application's archive (its prefix). */
const objectsOf = async (app: string) =>
  (await env.HISTORY.list({ prefix: `${encodeURIComponent(app)}/` })).objects.map((o) => o.key);

const hotIds = async (webhookId: string) =>
  (
    await endpointSql<{ id: string }>(
      webhookId,
      'SELECT CAST(delivery_id AS TEXT) AS id FROM deliveries ORDER BY delivery_id',
    )
  ).map((r) => r.id);
const archivedIds = async (webhookId: string) =>
  (
    await endpointSql<{ id: string }>(
      webhookId,
      'SELECT CAST(delivery_id AS TEXT) AS id FROM archived ORDER BY delivery_id',
    )
  ).map((r) => r.id);

/** The reply's value as text, exactly as written (field order, digits). */
async function valueText(res: Response, usedD1 = true): Promise<string> {
  const { text } = await expectValue(res, 200, { usedD1 });
  return text;
}

/** Every page of the log for this query, `limit` at a time, following the cursors. */
async function allPages(app: string, webhookId: string, query: string, limit: number): Promise<string[]> {
  const headers = bearer(await tokenFor(app));
  const texts: string[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `webhook_id=${webhookId}&limit=${limit}${query}${cursor === null ? '' : `&cursor=${cursor}`}`;
    const text = await valueText(await readLog(q, headers));
    texts.push(text);
    cursor = (JSON.parse(text) as { value: { next_cursor: string | null } }).value.next_cursor;
  } while (cursor !== null);
  return texts;
}

/** Every reply the history gives: pages (filters, cursors), each delivery by id, the stats. */
async function replies(app: string, webhookId: string, ids: string[]) {
  const headers = bearer(await tokenFor(app));
  const pages: Record<string, string[]> = {};
  for (const [query, limit] of [
    ['', 2],
    ['', 50],
    ['&status=succeeded', 1],
    ['&status=failed', 2],
    ['&status=pending', 2],
    ['&type=MOD_NFT', 1],
    ['&type=NEW_NFT&status=succeeded', 1],
  ] as const) {
    pages[`${query}/${limit}`] = await allPages(app, webhookId, query, limit);
  }
  const one: string[] = [];
  for (const id of ids) one.push(await valueText(await readLog(`delivery_id=${id}`, headers), false));
  const stats = await valueText(
    await fetchAndWait({}, new Request(`${ORIGIN}/v1.0/app/nft/webhook/stats?webhook_id=${webhookId}`, { headers })),
  );
  return { pages, one, stats };
}

/**
 * A webhook with five deliveries: succeeded (NEW_NFT, MOD_NFT, NEW_NFT), failed (twice 500,
 * with a body), and the newest still pending (its receiver busy).
 */
async function history() {
  const app = freshApp();
  const hook = await registerWebhook(app);
  let busy = false;
  const { requests } = receiver((req) => {
    if (busy) return new Response('busy', { status: 503 });
    return req.body.includes('"gone"') ? new Response('gone for good', { status: 500 }) : new Response('ok');
  });
  const ids: string[] = [];
  for (const [type, data] of [
    ['NEW_NFT', { n: 1 }],
    ['MOD_NFT', { n: 2 }],
    ['NEW_NFT', { n: 3, gone: true }],
    ['NEW_NFT', { n: 4 }],
  ] as const) {
    const made = (await publishEvent(app, type, data)).deliveryIds;
    ids.push(...made);
    await deliverDue(hook.id);
    if ('gone' in data) {
      // Its schedule's last attempt, failed too: the delivery fails.
      await makeDue(hook.id, made[0] as string, 8);
      await deliverDue(hook.id);
    }
  }
  busy = true;
  ids.push(...(await publishEvent(app, 'MOD_NFT', { n: 5 })).deliveryIds);
  await deliverDue(hook.id);
  return { app, hook, ids, requests };
}

describe('hot and cold', () => {
  it('archives what ended to R2 from the alarm, and every read answers exactly as it did hot', async () => {
    const { app, hook, ids } = await history();
    const before = await replies(app, hook.id, ids);
    expect(JSON.parse(before.one[2] as string).value).toMatchObject({
      status: 'failed',
      attempts: 9,
      last_status: 500,
    });

    await archive(hook.id);
    // Only the pending one is hot; the four that ended are slim rows, in one R2 object of the application's prefix.
    expect(await hotIds(hook.id)).toEqual([ids[4]]);
    expect(await archivedIds(hook.id)).toEqual(ids.slice(0, 4));
    expect(await endpointSql(hook.id, 'SELECT COUNT(*) AS n FROM delivery_attempts')).toEqual([{ n: 1 }]);
    const keys = await objectsOf(app);
    expect(keys).toEqual([`${encodeURIComponent(app)}/${hook.id}/${ids[0]}-${ids[3]}.ndjson.gz`]);
    // Compressed JSON lines, each delivery whole with its attempts and bodies.
    const object = await env.HISTORY.get(keys[0] as string);
    const lines = (await new Response(object?.body.pipeThrough(new DecompressionStream('gzip'))).text()).split('\n');
    expect(lines.map((l) => JSON.parse(l).delivery_id)).toEqual(ids.slice(0, 4));
    expect(JSON.parse(lines[2] as string).attempt_log).toMatchObject([
      { attempt: 1, status: 500, body: 'gone for good' },
      { attempt: 9, status: 500, body: 'gone for good' },
    ]);

    // Each page, filter and cursor, each delivery by id, the stats: the same text.
    expect(await replies(app, hook.id, ids)).toEqual(before);
    // Again from a fresh instance (nothing read before kept in memory).
    await evictDurableObject(endpointOf(hook.id));
    expect(await replies(app, hook.id, ids)).toEqual(before);
  });

  it('leaves them hot when the write to R2 fails, and archives them at a later alarm', async () => {
    const { app, hook, ids } = await history();
    const failing = {
      ...env.HISTORY,
      put: () => Promise.reject(new Error('R2 is down')),
    };
    await archive(hook.id, { HISTORY: failing });
    expect(await hotIds(hook.id)).toEqual(ids);
    expect(await archivedIds(hook.id)).toEqual([]);
    expect(await objectsOf(app)).toEqual([]);
    await archive(hook.id);
    expect(await hotIds(hook.id)).toEqual([ids[4]]);
    expect(await archivedIds(hook.id)).toEqual(ids.slice(0, 4));
    expect(await objectsOf(app)).toHaveLength(1);
  });

  it('resends an archived delivery with its original body and webhook-id, signed', async () => {
    const { app, hook, ids, requests } = await history();
    const first = requests[0];
    await archive(hook.id);
    requests.length = 0;
    const { res } = await postJson('delivery/resend', { delivery_id: ids[0] }, bearer(await tokenFor(app)));
    const { text } = await expectValue(res, 202);
    const resent = /"delivery_id":(\d+)/.exec(text)?.[1] as string;
    expect(await hotIds(hook.id)).toContain(resent);
    await alarmWith(hook.id, {});
    const sent = requests.find((r) => r.body === first?.body);
    expect(sent?.headers['webhook-id']).toBe(first?.headers['webhook-id']);
    expect(() =>
      new StandardWebhook(hook.secret).verify(sent?.body as string, {
        'webhook-id': sent?.headers['webhook-id'] as string,
        'webhook-timestamp': sent?.headers['webhook-timestamp'] as string,
        'webhook-signature': sent?.headers['webhook-signature'] as string,
      }),
    ).not.toThrow();
  });

  it('recovers an archived failed delivery: hot again, sent with its original body and webhook-id, counted once', async () => {
    const { app, hook, ids, requests } = await history();
    const original = requests.find((r) => r.body.includes('"gone"'));
    await archive(hook.id);
    // The deliveries' counters (the attempts' too would count the recovered one's next attempt, which its alarm may make at once).
    const stats = async () =>
      (await endpointOf(hook.id).stats('2000-01-01T00:00:00Z')).map(
        ({ hour, pending, succeeded, failed, cancelled }) => ({
          hour,
          pending,
          succeeded,
          failed,
          cancelled,
        }),
      );
    const counted = await stats();
    requests.length = 0;
    const { res } = await postJson(
      'recover',
      { webhook_id: hook.id, since: new Date(Date.now() - 3_600_000).toISOString() },
      bearer(await tokenFor(app)),
    );
    expect((await expectValue<{ deliveries: number }>(res, 202)).value).toEqual({ deliveries: 1 });
    // Back whole: its row and its attempts, no longer archived; the counters moved it from failed to pending only.
    expect(await hotIds(hook.id)).toEqual([ids[2], ids[4]]);
    expect(await archivedIds(hook.id)).toEqual([ids[0], ids[1], ids[3]]);
    expect(
      await endpointSql(
        hook.id,
        'SELECT attempt, status, body FROM delivery_attempts WHERE delivery_id = CAST(?1 AS INTEGER) AND attempt < 10',
        ids[2] as string,
      ),
    ).toEqual([
      { attempt: 1, status: 500, body: 'gone for good' },
      { attempt: 9, status: 500, body: 'gone for good' },
    ]);
    const [hour] = counted as { failed: number; pending: number }[];
    expect(await stats()).toEqual([{ ...hour, failed: (hour?.failed ?? 0) - 1, pending: (hour?.pending ?? 0) + 1 }]);
    await alarmWith(hook.id, {});
    const again = requests.find((r) => r.body === original?.body);
    expect(again?.headers['webhook-id']).toBe(original?.headers['webhook-id']);
    expect(() =>
      new StandardWebhook(hook.secret).verify(again?.body as string, {
        'webhook-id': again?.headers['webhook-id'] as string,
        'webhook-timestamp': again?.headers['webhook-timestamp'] as string,
        'webhook-signature': again?.headers['webhook-signature'] as string,
      }),
    ).not.toThrow();
  });

  it('retention deletes archived rows past the cut-off and the R2 objects whose deliveries all are', async () => {
    const { app, hook, ids } = await history();
    await archive(hook.id);
    const [first] = await objectsOf(app);
    // A second object, of a later delivery.
    const { deliveryIds: later } = await publishEvent(app, 'NEW_NFT', { n: 6 });
    vi.restoreAllMocks();
    receiver((req) => new Response(null, { status: req.body.includes('"n":6') ? 200 : 503 }));
    // Sent by a pass (under load a pass may hold it for its host's next slot: then by the next).
    await vi.waitFor(async () => {
      await deliverDue(hook.id);
      expect(await storedDelivery(hook.id, later[0] as string)).toMatchObject({ status: 'succeeded' });
    });
    await archive(hook.id);
    expect(await objectsOf(app)).toHaveLength(2);
    const created = await endpointSql<{ created: number }>(
      hook.id,
      'SELECT created FROM archived ORDER BY delivery_id',
    );
    const cut = (created[3]?.created as number) + 1;
    const purged = await runInDurableObject(endpointOf(hook.id), (_i, state) =>
      purgeArchive(state.storage, env.HISTORY, cut, 1000),
    );
    expect(purged).toEqual({ rows: 4, objects: 1 });
    expect(await archivedIds(hook.id)).toEqual(later);
    expect(await objectsOf(app)).not.toContain(first);
    expect(await objectsOf(app)).toHaveLength(1);
    const headers = bearer(await tokenFor(app));
    const page = await valueText(await readLog(`webhook_id=${hook.id}`, headers));
    // Newest first: the later delivery (archived), the pending one (hot); the four purged are gone.
    expect(idsIn(page)).toEqual([...later, ids[4]]);
  });
});

describe('retention inside an object', () => {
  it('a cut-off within one R2 object keeps it: its later deliveries still read, its earlier slim rows go', async () => {
    const { app, hook, ids } = await history();
    await archive(hook.id);
    const [object] = await objectsOf(app);
    const archived = await endpointSql<{ id: string; created: number }>(
      hook.id,
      'SELECT CAST(delivery_id AS TEXT) AS id, created FROM archived ORDER BY delivery_id',
    );
    expect(archived.map((a) => a.id)).toEqual(ids.slice(0, 4));
    // Between the second and the third delivery of the object.
    const [, second, third] = archived;
    expect((second?.created as number) < (third?.created as number)).toBe(true);
    const cut = (second?.created as number) + 1;
    const purged = await runInDurableObject(endpointOf(hook.id), (_i, state) =>
      purgeArchive(state.storage, env.HISTORY, cut, 1000),
    );
    expect(purged).toEqual({ rows: 2, objects: 0 });
    expect(await objectsOf(app)).toEqual([object]);
    expect(await endpointSql(hook.id, 'SELECT key FROM archive_objects')).toEqual([{ key: object }]);
    expect(await archivedIds(hook.id)).toEqual(ids.slice(2, 4));
    const headers = bearer(await tokenFor(app));
    for (const id of ids.slice(2, 4)) {
      const { value } = await expectValue<{ attempt_log: unknown[]; payload: string }>(
        await readLog(`delivery_id=${id}`, headers),
        200,
        { usedD1: false },
      );
      expect(value.attempt_log.length).toBeGreaterThan(0);
      expect(JSON.parse(value.payload).type).toBe('NEW_NFT');
    }
    // Newest first: the pending one (hot), then the two archived after the cut-off.
    const page = await valueText(await readLog(`webhook_id=${hook.id}`, headers));
    expect(idsIn(page)).toEqual([ids[4], ids[3], ids[2]]);
  });
});

describe('an Endpoint written by the release before (version 1: every delivery hot)', () => {
  it('takes the archive’s step, then archives its deliveries over time, a bounded batch an alarm, nothing lost', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response('ok'));
    const stub = endpointOf(hook.id);
    const created = new Date(Date.now() - 3_600_000).toISOString();
    const count = ARCHIVE_BATCH + 20;
    const base = 9_007_199_254_740_993n;
    await runInDurableObject(stub, (_instance, state) => {
      const { sql } = state.storage;
      // An object of the version before the archive's step (the last step), every delivery in its
      // hot tables. (An object of the first release takes every step: test/object-schema.test.ts.)
      for (const table of ['archived', 'archive_objects', 'archive_types']) sql.exec(`DROP TABLE IF EXISTS ${table}`);
      sql.exec('UPDATE schema_version SET version = ?1', ENDPOINT_SCHEMA.length - 1);
      sql.exec(`INSERT OR IGNORE INTO endpoint (key, value) VALUES ('webhook_id', ?1)`, hook.id);
      for (let i = 0; i < count; i++) {
        const id = String(base + BigInt(i));
        const status = ['succeeded', 'failed', 'cancelled'][i % 3] as string;
        sql.exec(
          `INSERT INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, attempts,
             last_attempt_at, last_status, last_error, created_at)
           VALUES (CAST(?1 AS INTEGER), ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`,
          id,
          `evt_${id}`,
          app,
          i % 2 === 0 ? 'NEW_NFT' : 'MOD_NFT',
          `{"type":"NEW_NFT","timestamp":"${created}","data":{"i":${i}}}`,
          status,
          status === 'cancelled' ? 0 : 1,
          status === 'cancelled' ? null : created,
          status === 'succeeded' ? 200 : status === 'failed' ? 500 : null,
          status === 'failed' ? 'HTTP 500' : null,
          created,
        );
        if (status !== 'cancelled') {
          sql.exec(
            `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
             VALUES (CAST(?1 AS INTEGER), 1, ?2, ?3, ?4, 7, ?5)`,
            id,
            created,
            status === 'succeeded' ? 200 : 500,
            status === 'failed' ? 'HTTP 500' : null,
            `reply ${i}`,
          );
        }
      }
    });
    const everything = async () => {
      const pages = [];
      let before: string | undefined;
      let more = true;
      while (more) {
        const page = await stub.list({ limit: 100, ...(before === undefined ? {} : { before }) });
        pages.push(page.rows);
        before = page.rows.at(-1)?.delivery_id;
        more = page.next !== null;
      }
      const one = [];
      for (const i of [0, 1, 2, count - 1]) one.push(await stub.get(String(base + BigInt(i)), app));
      return { pages, one, stats: await stub.stats(created.slice(0, 13)) };
    };
    const tables = () =>
      endpointSql(
        hook.id,
        `SELECT (SELECT json_group_array(json_array(delivery_id, status, attempts, payload)) FROM deliveries) AS d,
           (SELECT json_group_array(json_array(delivery_id, attempt, body)) FROM delivery_attempts) AS a,
           (SELECT json_group_array(json_array(hour, succeeded, failed, cancelled, attempts)) FROM delivery_stats) AS s`,
      );
    const written = await tables();

    // This release's class starts on that storage: step 2 makes the archive's tables, and every row is as it was.
    await evictDurableObject(stub);
    expect(await tables()).toEqual(written);
    const before = await everything();
    expect(before.pages.flat()).toHaveLength(count);
    expect(await endpointSql(hook.id, 'SELECT version FROM schema_version')).toEqual([
      { version: ENDPOINT_SCHEMA.length },
    ]);
    // One alarm archives one batch; the next, the rest.
    await archive(hook.id);
    expect(await archivedIds(hook.id)).toHaveLength(ARCHIVE_BATCH);
    expect(await hotIds(hook.id)).toHaveLength(count - ARCHIVE_BATCH);
    expect(await everything()).toEqual(before);
    await alarmWith(hook.id, HOT);
    expect(await hotIds(hook.id)).toEqual([]);
    expect(await archivedIds(hook.id)).toHaveLength(count);
    expect(await objectsOf(app)).toHaveLength(2);
    expect(await everything()).toEqual(before);
  });
});

describe('an archiving pass', () => {
  it('takes no more deliveries once their bodies pass about 4 MiB, and the next alarm takes the rest', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response('ok'));
    const created = new Date(Date.now() - 3_600_000).toISOString();
    // 100 events of 60 KiB (near the 64 KiB an event may be): 6 MiB in all.
    const big = 'x'.repeat(60 * 1024);
    const payload = `{"type":"NEW_NFT","timestamp":"${created}","data":{"blob":"${big}"}}`;
    const ids = Array.from({ length: 100 }, (_, i) => String(9_007_199_254_800_000n + BigInt(i)));
    await runInDurableObject(endpointOf(hook.id), (_instance, state) => {
      const { sql } = state.storage;
      sql.exec(`INSERT OR IGNORE INTO endpoint (key, value) VALUES ('webhook_id', ?1)`, hook.id);
      for (const id of ids) {
        sql.exec(
          `INSERT INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, attempts,
             last_attempt_at, last_status, created_at)
           VALUES (CAST(?1 AS INTEGER), ?2, ?2, ?3, 'NEW_NFT', ?4, 'succeeded', 1, ?5, 200, ?5)`,
          id,
          `evt_${id}`,
          app,
          payload,
          created,
        );
      }
    });
    await archive(hook.id);
    const first = (await archivedIds(hook.id)).length;
    // 4 MiB of 60 KiB payloads: 69 of them; the rest stay hot for the next alarm.
    expect(first).toBe(Math.ceil((4 * 1024 * 1024) / payload.length));
    expect(await hotIds(hook.id)).toEqual(ids.slice(first));
    await alarmWith(hook.id, HOT);
    expect(await archivedIds(hook.id)).toEqual(ids);
    expect(await objectsOf(app)).toHaveLength(2);
    // Each reads back whole, from either object.
    for (const id of [ids[0], ids[first], ids[99]] as string[]) {
      expect(await endpointOf(hook.id).eventOf(id, app)).toEqual({ type: 'NEW_NFT', payload, message_id: `evt_${id}` });
    }
  });
});

describe('an alarm that writes to R2', () => {
  it('sends a delivery handed over while it waits on R2 at once, not at its own next time', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const { requests } = receiver(() => new Response('ok'));
    const [old] = (await publishEvent(app, 'NEW_NFT', { n: 1 })).deliveryIds;
    await deliverDue(hook.id);
    // It ended an hour ago: archived by an alarm whose hot time is ten minutes, which then has
    // nothing to archive for ten minutes.
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    await endpointSql(
      hook.id,
      'UPDATE deliveries SET created_at = ?1, last_attempt_at = ?1 WHERE delivery_id = CAST(?2 AS INTEGER)',
      hourAgo,
      old as string,
    );
    const fresh = {
      delivery_id: '9007199254740993',
      event_id: 'evt_arrived',
      message_id: 'evt_arrived',
      app_id: app,
      type: 'NEW_NFT',
      payload: '{"type":"NEW_NFT","timestamp":"2026-11-26T00:00:00.000Z","data":{"n":2}}',
      created_at: new Date().toISOString(),
    };
    // The bucket's write is where the new delivery arrives: handed over while the alarm waits on R2.
    await runInDurableObject(endpointOf(hook.id), async (instance) => {
      const object = instance as unknown as {
        env: object;
        archiveAt: number;
        alarm(): Promise<void>;
        handOver(webhookId: string, deliveries: (typeof fresh)[]): Promise<void>;
      };
      const bucket = {
        put: async (...args: Parameters<R2Bucket['put']>) => {
          await object.handOver(hook.id, [fresh]);
          return env.HISTORY.put(...args);
        },
      };
      const own = object.env;
      object.archiveAt = 0;
      Object.defineProperty(object, 'env', {
        value: { ...env, HISTORY_HOT_SECONDS: '600', HISTORY: bucket },
        configurable: true,
        writable: true,
      });
      try {
        await object.alarm();
      } finally {
        Object.defineProperty(object, 'env', { value: own, configurable: true, writable: true });
      }
    });
    expect(await archivedIds(hook.id)).toEqual([old]);
    await vi.waitFor(() => expect(requests.map((r) => r.headers['webhook-id'])).toContain('evt_arrived'), {
      timeout: 5_000,
      interval: 50,
    });
  });
});
