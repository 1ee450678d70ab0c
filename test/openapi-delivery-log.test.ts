// docs/openapi.json on the delivery log: GET /v1.0/app/nft/webhook/delivery.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DELIVERY_PATH } from '../src/deliveries/routes';
import { insertWebhook } from './helpers/database';
import { deliverDue, deliveriesOfEvent, makeDue } from './helpers/objects';
import {
  broken,
  expectEachDocumented,
  expectOtherMethodsRefused,
  limited,
  overloaded,
  registerAs,
} from './helpers/openapi';
import { receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { eventRequest, fetchAndWait, fetchWith, ORIGIN } from './helpers/requests';
import { bearer, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

type Delivery = { delivery_id: number; status: string; attempt_log?: Record<string, unknown>[] } & Record<
  string,
  unknown
>;
type Page = { deliveries: Delivery[]; next_cursor: string | null };

describe('docs/openapi.json: the delivery log', () => {
  let token: string;
  let hook: number;
  let gone: number;
  let delivered: string;
  let failed: string;
  let pending: string;
  let foreign: string;
  let theirs: string;
  let bookmark: string;
  let cursor: string;
  /** What each success answered, by its label. */
  let values: Map<string, unknown>;
  const log = (query: string, headers: Record<string, string>) =>
    new Request(`${ORIGIN}${DELIVERY_PATH}?${query}`, { headers });

  /** Answers the request held for the newest delivery (see beforeAll). */
  let release = (_res: Response) => {};

  beforeAll(async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    token = await tokenFor('app-l');
    hook = await registerAs(token, 'log');
    gone = await registerAs(token, 'log-gone');
    const publish = async (appId: string) => {
      const res = await fetchAndWait(
        {},
        eventRequest({ app_id: appId, type: 'nft.minted', data: {} }, bearer(await platformToken())),
      );
      return (await expectValue<{ event_id: string }>(res, 202)).value.event_id;
    };
    const deliveryOf = async (webhookId: number | string, eventId: string) =>
      (await deliveriesOfEvent(String(webhookId), eventId))[0] as string;

    // The first attempt to `log` gets no connection, the second 200, the third is held (answered
    // after the tests, so the newest delivery is pending and not attempted while they run);
    // `log-gone` answers 410 with 2,000 bytes, of which the log keeps 1,024.
    const held = new Promise<Response>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    receiver((req) => {
      if (req.url.endsWith('/log-gone')) return new Response('é'.repeat(1000), { status: 410 });
      if (!req.url.endsWith('/log')) return new Response('ok');
      calls++;
      if (calls === 1) throw new TypeError('Network connection lost');
      return calls === 2 ? new Response('ok') : held;
    });
    const sent = await publish('app-l');
    [delivered, failed] = [await deliveryOf(hook, sent), await deliveryOf(gone, sent)];
    await deliverDue(String(hook), String(gone));
    await makeDue(String(hook), delivered);
    await deliverDue(String(hook));
    // A newer one, not attempted yet (`log-gone` is disabled now: it gets none).
    pending = await deliveryOf(hook, await publish('app-l'));
    foreign = await insertWebhook('app-m');
    // Delivery ids are unique within an application (they carry its event's number and its
    // endpoint's): app-m's is made past app-l's numbers, so that it names no delivery of app-l.
    for (let i = 0; i < 3; i++) await publish('app-m');
    theirs = await deliveryOf(foreign, await publish('app-m'));

    const first = await fetchWith({}, log(`webhook_id=${hook}&limit=1`, bearer(token)));
    bookmark = first.headers.get('x-d1-bookmark') as string;
    ({ next_cursor: cursor } = (await expectValue<{ next_cursor: string }>(first)).value);
  });

  afterAll(async () => {
    release(new Response('ok'));
    await deliverDue(String(hook));
  });

  it('documents every reply: pages, one delivery with its attempts, and failures', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    // Pages read the webhook in D1 first: every reply that used D1 has its bookmark.
    values = await expectEachDocumented(
      'get',
      DELIVERY_PATH,
      [
        ['200 page', () => fetchWith({}, log(`webhook_id=${hook}&limit=1`, bearer(token)))],
        ['200 next page', () => fetchWith({}, log(`webhook_id=${hook}&limit=1&cursor=${cursor}`, bearer(token)))],
        ['200 failed', () => fetchWith({}, log(`webhook_id=${gone}&status=failed`, bearer(token)))],
        ['200 none', () => fetchWith({}, log(`webhook_id=${gone}&status=pending`, bearer(token)))],
        [
          '200 bookmark',
          () => fetchWith({}, log(`webhook_id=${hook}`, { ...bearer(token), 'x-d1-bookmark': bookmark })),
        ],
        ['400', () => fetchWith({}, log(`webhook_id=${hook}&limit=0`, bearer(token)))],
        ['400 neither id', () => fetchWith({}, log('limit=5', bearer(token)))],
        ['400 status', () => fetchWith({}, log(`webhook_id=${hook}&status=done`, bearer(token)))],
        ['400 cursor', () => fetchWith({}, log(`webhook_id=${hook}&cursor=nope`, bearer(token)))],
        [
          '400 bookmark',
          () => fetchWith({}, log(`webhook_id=${hook}`, { ...bearer(token), 'x-d1-bookmark': 'first-primary' })),
        ],
        ['401', () => fetchWith({}, log(`webhook_id=${hook}`, {}))],
        ['401 invalid_token', () => fetchWith({}, log(`webhook_id=${hook}`, bearer('a.b.c')))],
        ['404', () => fetchWith({}, log(`webhook_id=${foreign}`, bearer(token)))],
        ['429', () => fetchWith(limited, log(`webhook_id=${hook}`, bearer(token)))],
        ['500', () => fetchWith({ DB: broken() }, log(`webhook_id=${hook}`, bearer(token)))],
        ['503', () => fetchWith({ DB: overloaded() }, log(`webhook_id=${hook}`, bearer(token)))],
      ],
      ['200', '404', '500', '503'],
    );
    // One delivery is read from the objects alone (no D1, so no bookmark): D1 failing changes nothing.
    const one = await expectEachDocumented(
      'get',
      DELIVERY_PATH,
      [
        ['200 delivery', () => fetchWith({}, log(`delivery_id=${delivered}`, bearer(token)))],
        [
          '200 delivery, the rest ignored',
          () => fetchWith({}, log(`delivery_id=${failed}&webhook_id=abc&limit=0`, bearer(token))),
        ],
        ['200 not attempted', () => fetchWith({}, log(`delivery_id=${pending}`, bearer(token)))],
        ['200 D1 down', () => fetchWith({ DB: overloaded() }, log(`delivery_id=${delivered}`, bearer(token)))],
        ['400 repeated', () => fetchWith({}, log(`delivery_id=${pending}&delivery_id=${pending}`, bearer(token)))],
        ['400 delivery_id', () => fetchWith({}, log('delivery_id=0', bearer(token)))],
        ['404 delivery', () => fetchWith({}, log(`delivery_id=${theirs}`, bearer(token)))],
        ['404 missing', () => fetchWith({}, log('delivery_id=9223372036854775807', bearer(token)))],
      ],
      [],
    );
    for (const [label, value] of one) values.set(label, value);
  });

  it('pages newest first, each delivery with its state and its last attempt', () => {
    // Newest first, one page after the other; the state of each, and its last attempt.
    const page = values.get('200 page') as Page;
    const next = values.get('200 next page') as Page;
    expect(page.deliveries.map((d) => d.delivery_id)).toEqual([Number(pending)]);
    expect(page.next_cursor).toBe(cursor);
    expect(next.deliveries.map((d) => d.delivery_id)).toEqual([Number(delivered)]);
    expect(next.next_cursor).toBeNull();
    expect((values.get('200 bookmark') as Page).deliveries.map((d) => d.delivery_id)).toEqual(
      [pending, delivered].map(Number),
    );
    expect(page.deliveries[0]).toMatchObject({ status: 'pending', attempts: 0, last_attempt_at: null });
    expect((values.get('200 none') as Page).deliveries).toEqual([]);
    const [gave] = (values.get('200 failed') as Page).deliveries;
    expect(gave).toMatchObject({ delivery_id: Number(failed), status: 'failed', last_status: 410, last_error: null });
  });

  it('answers one delivery with its attempts, oldest first, with what each got', () => {
    const one = values.get('200 delivery') as Delivery;
    expect(one).toMatchObject({
      status: 'succeeded',
      attempts: 2,
      next_attempt_at: null,
      last_status: 200,
      last_error: null,
    });
    expect(one.attempt_log?.map(({ attempt, status, error, body }) => ({ attempt, status, error, body }))).toEqual([
      { attempt: 1, status: null, error: 'connection', body: null },
      { attempt: 2, status: 200, error: null, body: 'ok' },
    ]);
    const kept = (values.get('200 delivery, the rest ignored') as Delivery).attempt_log?.[0]?.body as string;
    expect(kept).toBe('é'.repeat(512));
    expect(new TextEncoder().encode(kept).byteLength).toBe(1024);
    expect((values.get('200 not attempted') as Delivery).attempt_log).toEqual([]);
    expect(values.get('200 D1 down')).toEqual(one);
  });

  it('answers other methods 405', async () => {
    await expectOtherMethodsRefused(DELIVERY_PATH, `?webhook_id=${hook}`, ['POST', 'PUT', 'DELETE', 'HEAD'], token);
  });
});
