// The delivery log: GET /v1.0/app/nft/webhook/delivery, a webhook's deliveries or one with its attempts.
import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { countingDb } from './helpers/database';
import { deliverDue, endpointSql, makeDue } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectQueryFail, expectValue } from './helpers/replies';
import { publishDeliveries, readLog, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

interface Delivery {
  delivery_id: number;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  payload?: string;
  attempt_log?: {
    attempt: number;
    attempted_at: string;
    status: number | null;
    error: string | null;
    duration_ms: number;
    body: string | null;
  }[];
}
type Page = { deliveries: Delivery[]; next_cursor: string | null };

/** The delivery ids of a reply, with their exact digits (int64 ids are beyond a double's precision). */
const idsIn = (text: string) => [...text.matchAll(/"delivery_id":(\d+)/g)].map((m) => m[1] as string);

/** A page of the log, with its ids as they were written. */
async function page(query: string, headers: Record<string, string>) {
  const { text, value } = await expectValue<Page>(await readLog(query, headers));
  return { ...value, ids: idsIn(text) };
}

describe('GET /v1.0/app/nft/webhook/delivery', () => {
  it('lists a webhook’s deliveries newest first, with the latest attempt of each', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    // The first delivery is answered 503; the second one's request is held until the end, so the
    // log shows it pending and not attempted yet.
    let release = (_res: Response) => {};
    const held = new Promise<Response>((resolve) => {
      release = resolve;
    });
    receiver((_req, n) => (n === 1 ? new Response('busy', { status: 503 }) : held));
    const first = await publishDeliveries(app, 'NEW_NFT');
    await deliverDue(hook.id);
    const second = await publishDeliveries(app, 'MOD_NFT');
    const headers = bearer(await tokenFor(app));
    const { text, value } = await expectValue<Page>(await readLog(`webhook_id=${hook.id}`, headers));
    release(new Response('busy', { status: 503 }));
    await deliverDue(hook.id);
    expect(value.next_cursor).toBeNull();
    expect(idsIn(text)).toEqual([second[0], first[0]]);
    expect(value.deliveries[0]).toEqual({
      delivery_id: expect.any(Number),
      event_id: expect.stringMatching(/^evt_/),
      type: 'MOD_NFT',
      status: 'pending',
      attempts: 0,
      next_attempt_at: expect.any(String),
      last_attempt_at: null,
      last_status: null,
      last_error: null,
      created_at: expect.any(String),
    });
    expect(value.deliveries[1]).toMatchObject({
      type: 'NEW_NFT',
      status: 'pending',
      attempts: 1,
      last_status: 503,
      last_error: null,
    });
  });

  it('pages with a cursor that neither repeats nor skips while deliveries are added, and filters by status', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    // Every other request succeeds; the rest answer 503 and stay pending.
    receiver((_req, n) => new Response(null, { status: n % 2 === 1 ? 200 : 503 }));
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(...(await publishDeliveries(app)));
    const headers = bearer(await tokenFor(app));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `webhook_id=${hook.id}&limit=2${cursor === null ? '' : `&cursor=${cursor}`}`;
      const { ids, next_cursor }: { ids: string[]; next_cursor: string | null } = await page(query, headers);
      seen.push(...ids);
      cursor = next_cursor;
      // Newer deliveries arrive between pages: they belong before the first page, not in the rest.
      await publishDeliveries(app);
    } while (cursor !== null);
    expect(seen).toEqual([...made].reverse());

    await deliverDue(hook.id);
    const stored = await endpointSql<{ id: string; status: string }>(
      hook.id,
      'SELECT CAST(delivery_id AS TEXT) AS id, status FROM deliveries ORDER BY delivery_id DESC',
    );
    const withStatus = (status: string) => stored.filter((d) => d.status === status).map((d) => d.id);
    expect(withStatus('succeeded').length).toBeGreaterThan(0);
    expect(withStatus('pending').length).toBeGreaterThan(0);
    for (const status of ['succeeded', 'pending', 'failed']) {
      expect((await page(`webhook_id=${hook.id}&status=${status}`, headers)).ids, status).toEqual(withStatus(status));
    }
  });

  it('filters by event type, with status and pages alike; a malformed type is 400', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response('busy', { status: 503 }));
    const minted = [...(await publishDeliveries(app, 'NEW_NFT')), ...(await publishDeliveries(app, 'NEW_NFT'))];
    const modified = await publishDeliveries(app, 'MOD_NFT');
    const headers = bearer(await tokenFor(app));
    const of = (query: string) => page(`webhook_id=${hook.id}&${query}`, headers);

    expect((await of('type=NEW_NFT')).ids).toEqual([...minted].reverse());
    const mod = await of('type=MOD_NFT');
    expect(mod.ids).toEqual(modified);
    expect(mod.deliveries.map((d) => d.type)).toEqual(['MOD_NFT']);
    const first = await of('type=NEW_NFT&limit=1');
    expect(first.ids).toEqual([minted[1]]);
    const second = await of(`type=NEW_NFT&limit=1&cursor=${first.next_cursor}`);
    expect(second.ids).toEqual([minted[0]]);
    expect(second.next_cursor).toBeNull();
    expect((await of('type=NEW_NFT&status=failed')).deliveries).toEqual([]);
    expect((await of('type=webhook.test')).deliveries).toEqual([]);

    for (const bad of ['type=bad%20type', 'type=', 'type=A&type=B']) {
      const res = await readLog(`webhook_id=${hook.id}&${bad}`, headers);
      await expectQueryFail(res, 400);
    }
  });

  it('answers one delivery with the body its requests carried and its attempt log, oldest first', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const { requests } = receiver((_, n) => (n === 1 ? new Response('down', { status: 500 }) : new Response('fine')));
    const [id] = await publishDeliveries(app);
    await deliverDue(hook.id);
    await makeDue(hook.id, id!);
    await deliverDue(hook.id);
    const res = await readLog(`delivery_id=${id}`, bearer(await tokenFor(app)));
    // Read from the objects alone: no D1 session, so no X-D1-Bookmark.
    expect(res.headers.get('x-d1-bookmark')).toBeNull();
    const text = await res.text();
    const { value } = JSON.parse(text) as { value: Delivery };
    expect({ status: res.status, body: JSON.parse(text).return }).toEqual({ status: 200, body: 0 });
    expect(idsIn(text)).toEqual([id]);
    expect(value).toMatchObject({
      status: 'succeeded',
      attempts: 2,
      last_status: 200,
      next_attempt_at: null,
    });
    expect(value.attempt_log).toEqual([
      {
        attempt: 1,
        attempted_at: expect.any(String),
        status: 500,
        error: null,
        duration_ms: expect.any(Number),
        body: 'down',
      },
      {
        attempt: 2,
        attempted_at: expect.any(String),
        status: 200,
        error: null,
        duration_ms: expect.any(Number),
        body: 'fine',
      },
    ]);
    // The request's body, exactly as each attempt sent it (the page shows what was sent).
    expect(requests).toHaveLength(2);
    expect(value.payload).toBe(requests[0]?.body);
    expect(value.payload).toBe(requests[1]?.body);
    // Only the one delivery's read carries it, never a page of the log.
    const page = await readLog(`webhook_id=${hook.id}`, bearer(await tokenFor(app)));
    const { value: listed } = JSON.parse(await page.text()) as { value: { deliveries: Delivery[] } };
    expect(listed.deliveries[0]).not.toHaveProperty('payload');
  });

  it('answers a foreign and a missing webhook or delivery with one identical 404', async () => {
    const app = freshApp();
    const other = freshApp();
    const theirs = await registerWebhook(other);
    receiver();
    const [theirDelivery] = await publishDeliveries(other);
    const headers = bearer(await tokenFor(app));
    for (const [foreign, missing] of [
      [`webhook_id=${theirs.id}`, 'webhook_id=999999999'],
      [`delivery_id=${theirDelivery}`, 'delivery_id=999999999'],
    ]) {
      const a = await readLog(foreign!, headers);
      const b = await readLog(missing!, headers);
      expect(a.headers.get('x-error-detail')).toBe(b.headers.get('x-error-detail'));
      await expectQueryFail(a, 404);
      await expectQueryFail(b, 404);
    }
  });

  it.each([
    ['', 'webhook_id or delivery_id is required'],
    ['webhook_id=0', undefined],
    ['webhook_id=1&limit=0', 'limit must be a whole number from 1 to 100'],
    ['webhook_id=1&limit=101', 'limit must be a whole number from 1 to 100'],
    ['webhook_id=1&status=done', 'status must be one of pending, succeeded, failed, cancelled'],
    ['webhook_id=1&status=failed&status=pending', 'status must be given once'],
    ['webhook_id=1&cursor=nope', 'cursor is not a next_cursor this API issued'],
    // A cursor of the webhook list is not one of the delivery log.
    ['webhook_id=1&cursor=dzE6Mg', 'cursor is not a next_cursor this API issued'],
    ['delivery_id=abc', undefined],
    ['delivery_id=1&delivery_id=2', 'delivery_id must be given once'],
  ])('answers 400 for ?%s', async (query, detail) => {
    const res = await readLog(query, bearer(await tokenFor(freshApp())));
    if (detail !== undefined) expect(res.headers.get('x-error-detail')).toBe(detail);
    await expectQueryFail(res, 400);
  });

  it('is one D1 round trip, sends X-D1-Bookmark, and refuses a malformed bookmark', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const headers = bearer(await tokenFor(app));
    const { db, calls } = countingDb(env.DB);
    const res = await readLog(`webhook_id=${hook.id}`, headers, { DB: db });
    await expectValue(res);
    expect(calls()).toBe(1);
    const bookmark = res.headers.get('x-d1-bookmark')!;
    await expectValue(await readLog(`webhook_id=${hook.id}`, { ...headers, 'x-d1-bookmark': bookmark }));
    await expectQueryFail(
      await readLog(`webhook_id=${hook.id}`, { ...headers, 'x-d1-bookmark': 'first-primary' }),
      400,
    );
  });
});
