// Every id the service gives reads exactly with plain JSON.parse (at most 2^53 - 1), as users'
// clients read it, and addresses the same resource when sent back; the wider ids the release
// before gave (from 2^62) stay addressable, and list in the order they were made.
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { endpointOf, endpointSql } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { fetchAndWait, ORIGIN, postJson, publishEvent, readLog, stoppedAfterEachTest, URL_ } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

const WIDE = 2n ** 62n;
/** Webhooks registered here stop their objects' alarms when a test ends. */
const { register } = stoppedAfterEachTest();

/** A reply's body read as every client reads JSON. */
async function parsed<T>(res: Response, status: number): Promise<T> {
  expect(res.status).toBe(status);
  const body = JSON.parse(await res.text()) as { return: number; value: T };
  expect(body.return).toBe(0);
  return body.value;
}

interface Delivery {
  delivery_id: number;
  event_id: string;
  status: string;
}

describe('ids read with plain JSON.parse', () => {
  it('are safe integers that address the same webhook, delivery and event when sent back', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const { requests } = receiver();
    const hook = await register(app);
    const created = await parsed<{ webhook_id: number }>(
      await fetchAndWait({}, new Request(`${URL_}?webhook_id=${hook.id}`, { headers })),
      200,
    );
    expect(Number.isSafeInteger(created.webhook_id)).toBe(true);

    // A test event: its reply's delivery id, as JSON.parse gives it.
    const sent = await parsed<{ event_id: string; delivery_id: number }>(
      (await postJson('test', { webhook_id: created.webhook_id }, headers)).res,
      202,
    );
    expect(Number.isSafeInteger(sent.delivery_id)).toBe(true);
    expect(sent.delivery_id).toBeLessThanOrEqual(Number.MAX_SAFE_INTEGER);
    await endpointOf(hook.id).deliverDue();
    expect(requests).toHaveLength(1);

    // The log's ids, the one delivery's, the resend's: each sent back as JSON.parse read it.
    const page = await parsed<{ deliveries: Delivery[] }>(
      await readLog(`webhook_id=${created.webhook_id}`, headers),
      200,
    );
    expect(page.deliveries.map((d) => d.delivery_id)).toEqual([sent.delivery_id]);
    const one = await parsed<Delivery>(await readLog(`delivery_id=${page.deliveries[0]?.delivery_id}`, headers), 200);
    expect(one.delivery_id).toBe(sent.delivery_id);
    expect(one.event_id).toBe(sent.event_id);
    const again = await parsed<{ delivery_id: number }>(
      (await postJson('delivery/resend', JSON.stringify({ delivery_id: one.delivery_id }), headers)).res,
      202,
    );
    expect(Number.isSafeInteger(again.delivery_id)).toBe(true);
    expect(again.delivery_id).toBeGreaterThan(one.delivery_id);
    const resent = await parsed<Delivery>(await readLog(`delivery_id=${again.delivery_id}`, headers), 200);
    expect(resent.event_id).toBe(sent.event_id);

    // The event's journey, by the id the test event answered.
    const journey = await parsed<{ event_id: string; deliveries: { webhook_id: number; delivery_id: number }[] }>(
      await fetchAndWait({}, new Request(`${ORIGIN}/v1.0/app/nft/event?event_id=${sent.event_id}`, { headers })),
      200,
    );
    expect(journey.deliveries).toEqual([
      expect.objectContaining({ webhook_id: created.webhook_id, delivery_id: sent.delivery_id }),
    ]);
  });

  it('publishing gives every delivery a safe integer id, one sequence number per event', async () => {
    const app = freshApp();
    await register(app);
    await register(app, { url: `https://${app}.example.com/b` });
    receiver();
    for (let i = 0; i < 3; i++) {
      const { eventId, deliveryIds } = await publishEvent(app);
      expect(deliveryIds).toHaveLength(2);
      for (const id of deliveryIds) {
        expect(BigInt(id)).toBeLessThanOrEqual(BigInt(Number.MAX_SAFE_INTEGER));
        expect(BigInt(id)).toBeGreaterThanOrEqual(2n ** 52n);
        expect(String(JSON.parse(id))).toBe(id);
      }
      // The event's id carries its sequence number, which its deliveries' ids carry too.
      const [a, b] = deliveryIds.map(BigInt) as [bigint, bigint];
      expect((a - 2n ** 52n) >> 14n).toBe((b - 2n ** 52n) >> 14n);
      expect(BigInt(`0x${eventId.slice(4, 14)}`)).toBe((a - 2n ** 52n) >> 14n);
      expect(eventId).toMatch(/^evt_[0-9a-f]{32}$/);
    }
  });
});

/**
 * A delivery as the release before made it, at the webhook's endpoint: its id 2^62 + (a sequence
 * number << 14) + the endpoint's number (the same as this release's for the webhook), made
 * `minutes` ago, pending or succeeded.
 */
async function wideDelivery(webhookId: string, app: string, sequence: bigint, endpoint: number, pending: boolean) {
  const id = (WIDE + (sequence << 14n) + BigInt(endpoint)).toString();
  const created = new Date(Date.now() - 60_000).toISOString();
  await endpointSql(
    webhookId,
    `INSERT INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, attempts, next_attempt_at, created_at)
     VALUES (CAST(?1 AS INTEGER), 'evt_wide', 'evt_wide', ?2, 'NEW_NFT', '{"type":"NEW_NFT","timestamp":"x","data":{}}', ?3, ?4, ?5, ?6)`,
    id,
    app,
    pending ? 'pending' : 'succeeded',
    pending ? 0 : 1,
    pending ? created : null,
    created,
  );
  return id;
}

describe('ids the release before gave above 2^53', () => {
  it('are read by their digits in a query and in a body (number or string), and list after the newer ones', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const hook = await register(app);
    receiver();
    // This release's delivery first (it numbers the endpoint 1), then one of the release before's.
    const { deliveryIds } = await publishEvent(app);
    await endpointOf(hook.id).deliverDue();
    const wide = await wideDelivery(hook.id, app, 123_456_789n, 1, false);
    expect(BigInt(wide)).toBeGreaterThan(BigInt(Number.MAX_SAFE_INTEGER));

    const text = await (await readLog(`delivery_id=${wide}`, headers)).text();
    expect(text).toContain(`"delivery_id":${wide},`);
    // Newest first: this release's (made after), then the release before's, on one page and across pages.
    const page = await (await readLog(`webhook_id=${hook.id}`, headers)).text();
    expect([...page.matchAll(/"delivery_id":(\d+)/g)].map((m) => m[1])).toEqual([deliveryIds[0], wide]);
    const first = JSON.parse(await (await readLog(`webhook_id=${hook.id}&limit=1`, headers)).text()) as {
      value: { next_cursor: string };
    };
    const second = await (
      await readLog(`webhook_id=${hook.id}&limit=1&cursor=${first.value.next_cursor}`, headers)
    ).text();
    expect([...second.matchAll(/"delivery_id":(\d+)/g)].map((m) => m[1])).toEqual([wide]);

    for (const body of [`{"delivery_id":${wide}}`, `{"delivery_id":"${wide}"}`]) {
      const { res } = await postJson('delivery/resend', body, headers);
      expect(res.status).toBe(202);
      const made = /"delivery_id":(\d+)/.exec(await res.text())?.[1] as string;
      expect(BigInt(made)).toBeLessThanOrEqual(BigInt(Number.MAX_SAFE_INTEGER));
      const copy = JSON.parse(await (await readLog(`delivery_id=${made}`, headers)).text()) as {
        value: { event_id: string };
      };
      expect(copy.value.event_id).toBe('evt_wide');
    }
  });

  it('a FIFO endpoint sends a pending delivery of the release before ahead of newer ones', async () => {
    const app = freshApp();
    const hook = await register(app, { ordering: 'fifo' });
    const { requests } = receiver();
    const wide = await wideDelivery(hook.id, app, 99n, 1, true);
    await runInDurableObject(endpointOf(hook.id), (_, state) => state.storage.deleteAlarm());
    await publishEvent(app, 'MOD_NFT', { n: 2 });
    await endpointOf(hook.id).deliverDue();
    await endpointOf(hook.id).deliverDue();
    // (Other tests' endpoints may still send to their own hosts.)
    const mine = requests.filter((r) => new URL(r.url).host === `${app}.example.com`);
    expect(mine.map((r) => JSON.parse(r.body).type)).toEqual(['NEW_NFT', 'MOD_NFT']);
    const [row] = await endpointSql<{ status: string }>(
      hook.id,
      'SELECT status FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER)',
      wide,
    );
    expect(row?.status).toBe('succeeded');
  });
});
