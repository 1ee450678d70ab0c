// GET /v1.0/app/nft/event?event_id=…: an event and its delivery to each endpoint it went to, for
// as long as those deliveries are kept (hot or archived); another application's event, one no
// longer kept and one never published are the same 404.
import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { alarmWith, applicationOf, applicationSql, endpointOf, endpointSql, makeDue } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectEnvelope, expectQueryFail } from './helpers/replies';
import { fetchAndWait, ORIGIN, postJson, publishEvent, readLog, stoppedAfterEachTest } from './helpers/requests';
import { daysAgo } from './helpers/time';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

/** Webhooks registered here stop their objects' alarms when a test ends. */
const { register } = stoppedAfterEachTest();
const EVENT_URL = `${ORIGIN}/v1.0/app/nft/event`;
const journey = (query: string, headers: Record<string, string>) =>
  fetchAndWait({}, new Request(`${EVENT_URL}?${query}`, { headers }));

interface Journey {
  event_id: string;
  type: string;
  data: unknown;
  created_at: string;
  deliveries: {
    webhook_id: number;
    delivery_id: number;
    status: string;
    attempts: number;
    last_status: number | null;
    last_error: string | null;
  }[];
}

async function journeyOf(res: Response): Promise<{ value: Journey; text: string }> {
  const text = await res.text();
  expect(res.status, text).toBe(200);
  const body = JSON.parse(text) as { return: number; message: string; value: Journey };
  expect(body).toMatchObject({ return: 0, message: 'success' });
  return { value: body.value, text };
}

describe('GET /v1.0/app/nft/event', () => {
  it('answers the event with its delivery to each endpoint, its data exact, to a read-only token too', async () => {
    const app = freshApp();
    const a = await register(app);
    const b = await register(app, { url: `https://${app}.example.com/b` });
    receiver((req) => (req.url.endsWith('/b') ? new Response('nope', { status: 500 }) : new Response('ok')));
    const big = '123456789012345678901234567890';
    const res = await fetchAndWait(
      {},
      new Request(`${ORIGIN}/v1.0/platform/nft/event`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...bearer(await tokenFor('platform', { scope: 'events:publish' })),
        },
        body: `{"app_id":${JSON.stringify(app)},"type":"NEW_NFT","data":{"price":${big},"owner":"0xabc"}}`,
      }),
    );
    expect(res.status).toBe(202);
    const eventId = (JSON.parse(await res.text()) as { value: { event_id: string } }).value.event_id;
    await endpointOf(a.id).deliverDue();
    await endpointOf(b.id).deliverDue();

    const { value, text } = await journeyOf(
      await journey(`event_id=${eventId}`, bearer(await tokenFor(app, { scope: 'webhooks:read' }))),
    );
    expect(text).toContain(`"data":{"price":${big},"owner":"0xabc"}`);
    expect(value).toMatchObject({ event_id: eventId, type: 'NEW_NFT' });
    expect(Date.parse(value.created_at)).toBeGreaterThan(Date.now() - 60_000);
    const byHook = Object.fromEntries(value.deliveries.map((d) => [String(d.webhook_id), d]));
    expect(Object.keys(byHook).sort()).toEqual([a.id, b.id].sort());
    expect(byHook[a.id]).toMatchObject({ status: 'succeeded', attempts: 1, last_status: 200, last_error: null });
    expect(byHook[b.id]).toMatchObject({ status: 'pending', attempts: 1, last_status: 500 });
    // Each delivery id is the one the log has, read back exactly.
    for (const d of value.deliveries) {
      const one = await readLog(`delivery_id=${d.delivery_id}`, bearer(await tokenFor(app)));
      expect(one.status).toBe(200);
      expect(((await one.json()) as { value: { event_id: string } }).value.event_id).toBe(eventId);
    }
  });

  it('is one 404 for another application’s event, an unknown one, and one whose id only shares its number', async () => {
    const app = freshApp();
    await register(app);
    receiver();
    const { eventId } = await publishEvent(app);
    const other = freshApp();
    await register(other);
    const headers = bearer(await tokenFor(other));
    const bodies: string[] = [];
    for (const id of [eventId, `${eventId.slice(0, 14)}${'0'.repeat(22)}`, `evt_${'f'.repeat(32)}`]) {
      const res = await journey(`event_id=${id}`, headers);
      await expectQueryFail(res.clone(), 404);
      bodies.push(await res.text());
    }
    // The same event id with another random part, asked by its own application: not this event.
    await expectQueryFail(
      await journey(`event_id=${eventId.slice(0, 14)}${'0'.repeat(22)}`, bearer(await tokenFor(app))),
      404,
    );
    expect(new Set(bodies).size).toBe(1);
  });

  it('refuses a missing or malformed event_id with 400 and a bad token with 401', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    for (const query of ['', 'event_id=', 'event_id=evt_xyz', `event_id=EVT_${'0'.repeat(32)}`, 'event_id=1']) {
      await expectQueryFail(await journey(query, headers), 400);
    }
    await expectEnvelope(
      await journey(`event_id=evt_${'0'.repeat(32)}`, bearer('nope')),
      401,
      20004,
      'Invalid jwt token',
    );
  });

  it('follows test events and resends under their own ids', async () => {
    const app = freshApp();
    const hook = await register(app);
    receiver();
    const headers = bearer(await tokenFor(app));
    const test = JSON.parse(await (await postJson('test', { webhook_id: Number(hook.id) }, headers)).res.text()) as {
      value: { event_id: string; delivery_id: number };
    };
    const tested = await journeyOf(await journey(`event_id=${test.value.event_id}`, headers));
    expect(tested.value.type).toBe('webhook.test');
    expect(tested.value.deliveries.map((d) => d.delivery_id)).toEqual([test.value.delivery_id]);

    const resent = JSON.parse(
      await (await postJson('delivery/resend', `{"delivery_id":${test.value.delivery_id}}`, headers)).res.text(),
    ) as { value: { delivery_id: number } };
    // The resend's own event (its receivers see the original's id as webhook-id): found by its stored id.
    const [row] = await endpointSql<{ event_id: string }>(
      hook.id,
      'SELECT event_id FROM deliveries WHERE delivery_id = ?1',
      resent.value.delivery_id,
    );
    const own = await journeyOf(await journey(`event_id=${row?.event_id}`, headers));
    expect(own.value.deliveries.map((d) => d.delivery_id)).toEqual([resent.value.delivery_id]);
  });

  it('reads archived deliveries as hot ones, and forgets the event with the retention', async () => {
    const app = freshApp();
    const hook = await register(app);
    receiver();
    const headers = bearer(await tokenFor(app));
    const { eventId, deliveryIds } = await publishEvent(app, 'NEW_NFT', { n: 1 });
    await endpointOf(hook.id).deliverDue();
    const hot = (await journeyOf(await journey(`event_id=${eventId}`, headers))).text;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await alarmWith(hook.id, { HISTORY_HOT_SECONDS: '1' });
    expect(await endpointSql(hook.id, 'SELECT COUNT(*) AS n FROM archived')).toEqual([{ n: 1 }]);
    expect((await journeyOf(await journey(`event_id=${eventId}`, headers))).text).toBe(hot);

    // One row per event in the application's object, gone with the retention.
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM journeys')).toEqual([{ n: 1 }]);
    await applicationSql(app, 'UPDATE journeys SET created = ?1', Date.parse(daysAgo(31)));
    await runInDurableObject(applicationOf(app), (instance) =>
      (instance as unknown as { alarm(): Promise<void> }).alarm(),
    );
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM journeys')).toEqual([{ n: 0 }]);
    await expectQueryFail(await journey(`event_id=${eventId}`, headers), 404);
    expect(deliveryIds).toHaveLength(1);
  });

  it('drops a delivery no longer kept at its endpoint, and is 404 when none is', async () => {
    const app = freshApp();
    const a = await register(app);
    const b = await register(app, { url: `https://${app}.example.com/b` });
    receiver();
    const headers = bearer(await tokenFor(app));
    const { eventId, deliveryIds } = await publishEvent(app);
    await makeDue(a.id, deliveryIds[0] as string);
    await endpointSql(a.id, 'DELETE FROM deliveries');
    const { value } = await journeyOf(await journey(`event_id=${eventId}`, headers));
    expect(value.deliveries.map((d) => String(d.webhook_id))).toEqual([b.id]);
    await endpointSql(b.id, 'DELETE FROM deliveries');
    await expectQueryFail(await journey(`event_id=${eventId}`, headers), 404);
  });
});
