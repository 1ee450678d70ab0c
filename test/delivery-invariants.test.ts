// Invariants of the sending engine that a hand-made mutation run found untested: each test here
// fails when the bug it names is put back (a repeated handover resetting a sent delivery, a batch
// deduplicated across applications, a publish without its safety alarm, a delivery id rounded to
// a double, an endpoint answering another application's delivery).
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Application } from '../src/events/application';
import type { NewDelivery } from '../src/events/store/events';
import {
  applicationOf,
  applicationSql,
  deliverDue,
  deliveriesOfEvent,
  endpointOf,
  storedDelivery,
} from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { fetchAndWait, LOG_URL, publishEvent, registerWebhook } from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** A delivery as an application's object hands it to an endpoint's. */
const newDelivery = (app: string, deliveryId: string): NewDelivery => ({
  delivery_id: deliveryId,
  event_id: `evt_${deliveryId}`,
  message_id: `evt_${deliveryId}`,
  app_id: app,
  type: 'NEW_NFT',
  payload: '{"type":"NEW_NFT","timestamp":"2026-11-25T00:00:00.000Z","data":{}}',
  created_at: new Date().toISOString(),
});

const publishBatch = async (events: unknown[]) =>
  fetchAndWait(
    {},
    new Request('https://webhooks.test/v1.0/platform/nft/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(await platformToken()) },
      body: JSON.stringify({ events }),
    }),
  );

describe('the endpoint object', () => {
  it('keeps a delivery it has sent when the same delivery is handed over again: it is not reset or sent twice', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const { requests } = receiver(() => new Response('ok'));
    const { deliveryIds } = await publishEvent(app);
    const [id] = deliveryIds as [string];
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    const sent = await storedDelivery(hook.id, id);
    expect(sent).toMatchObject({ status: 'succeeded', attempts: 1 });

    // The application's object hands it over again (its outbox row outlived a handover that had
    // in fact arrived): the endpoint keeps what the delivery has become.
    const { event_id, message_id, type, payload, created_at } = sent as NonNullable<typeof sent>;
    await endpointOf(hook.id).handOver(hook.id, [
      { delivery_id: id, event_id, message_id, app_id: app, type, payload, created_at },
    ]);
    await deliverDue(hook.id);
    expect(await storedDelivery(hook.id, id)).toEqual(sent);
    expect(requests).toHaveLength(1);
  });

  it('answers its reads by id for the owning application only, when called directly', async () => {
    const app = freshApp();
    const other = freshApp();
    const hook = await registerWebhook(app);
    const endpoint = endpointOf(hook.id);
    receiver(() => new Response('ok'));
    await endpoint.handOver(hook.id, [newDelivery(app, '4242')]);
    expect(await endpoint.get('4242', other)).toBeNull();
    expect(await endpoint.eventOf('4242', other)).toBeNull();
    expect((await endpoint.get('4242', app))?.delivery).toMatchObject({ delivery_id: '4242', message_id: 'evt_4242' });
    expect(await endpoint.eventOf('4242', app)).toMatchObject({ message_id: 'evt_4242', type: 'NEW_NFT' });
  });
});

describe('the delivery log', () => {
  it('writes a delivery id above 2^53 with its exact digits, in a page and by id', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response('ok'));
    const big = '9007199254740993';
    // At its endpoint, and in its application's index (which the read by id looks it up in).
    await endpointOf(hook.id).handOver(hook.id, [newDelivery(app, big)]);
    await applicationSql(
      app,
      `INSERT INTO deliveries (delivery_id, webhook_id, created_at) VALUES (CAST(?1 AS INTEGER), ?2, ?3)`,
      big,
      hook.id,
      new Date().toISOString(),
    );
    const headers = bearer(await tokenFor(app));
    const page = await fetchAndWait({}, new Request(`${LOG_URL}?webhook_id=${hook.id}`, { headers }));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`"delivery_id":${big},`);
    const one = await fetchAndWait({}, new Request(`${LOG_URL}?delivery_id=${big}`, { headers }));
    expect(one.status).toBe(200);
    expect(await one.text()).toContain(`{"delivery_id":${big},"event_id":"evt_${big}"`);
  });
});

describe('publishing', () => {
  it('keeps the same id of two applications in one batch as two events, each delivered to its own application', async () => {
    const [a, b] = [freshApp(), freshApp()];
    const [hookA, hookB] = [await registerWebhook(a), await registerWebhook(b)];
    receiver(() => new Response('ok'));
    const res = await publishBatch([
      { app_id: a, type: 'NEW_NFT', data: { n: 1 }, id: 'shared' },
      { app_id: b, type: 'NEW_NFT', data: { n: 2 }, id: 'shared' },
    ]);
    const { value } = await expectValue<{ event_ids: string[] }>(res, 202);
    const [idA, idB] = value.event_ids as [string, string];
    expect(idA).not.toBe(idB);
    expect(await applicationSql(a, 'SELECT event_id, source_key FROM dedupe')).toEqual([
      { event_id: idA, source_key: 'id:shared' },
    ]);
    expect(await applicationSql(b, 'SELECT event_id, source_key FROM dedupe')).toEqual([
      { event_id: idB, source_key: 'id:shared' },
    ]);
    const [[deliveryA], [deliveryB]] = [await deliveriesOfEvent(hookA.id, idA), await deliveriesOfEvent(hookB.id, idB)];
    expect(await applicationOf(a).locate(deliveryA ?? '')).toBe(hookA.id);
    expect(await applicationOf(b).locate(deliveryB ?? '')).toBe(hookB.id);
    expect(await storedDelivery(hookA.id, deliveryA ?? '')).toMatchObject({ event_id: idA });
    expect(JSON.parse((await storedDelivery(hookB.id, deliveryB ?? ''))?.payload ?? '{}').data).toEqual({ n: 2 });
  });

  it('leaves an alarm that finishes a handover that failed: the alarm, rung as the runtime rings it, hands the delivery over', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response('ok'));
    // The application's object cannot reach the endpoint's during the publish.
    const app_ = applicationOf(app);
    const realEnv = await runInDurableObject(app_, (instance: Application) => {
      const object = instance as unknown as { env: CloudflareBindings };
      const real = object.env;
      const refusing = { handOver: () => Promise.reject(new Error('overloaded')) };
      object.env = { ...real, ENDPOINTS: { getByName: () => refusing } as unknown as CloudflareBindings['ENDPOINTS'] };
      return real;
    });
    const { eventId } = await publishEvent(app);
    await runInDurableObject(app_, (instance: Application) => {
      (instance as unknown as { env: CloudflareBindings }).env = realEnv;
    });
    // Stored at the application, not at the endpoint: the outbox keeps it, and an alarm is set.
    expect(await applicationSql(app, 'SELECT event_id FROM outbox')).toEqual([{ event_id: eventId }]);
    expect(await runInDurableObject(applicationOf(app), (_i, state) => state.storage.getAlarm())).not.toBeNull();

    expect(await runDurableObjectAlarm(applicationOf(app))).toBe(true);
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM outbox')).toEqual([{ n: 0 }]);
    const [made] = await deliveriesOfEvent(hook.id, eventId);
    expect(await storedDelivery(hook.id, made ?? '')).toMatchObject({ event_id: eventId });
  });

  it('finishes a handover whose object died after storing it: its next start sets the alarm, which hands it over', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response('ok'));
    const { eventId, deliveryIds } = await publishEvent(app);
    const stub = applicationOf(app);
    // An alarm is set (hourly while it keeps events), written once, not for each publish.
    const alarm = await runInDurableObject(stub, (_i, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    await publishEvent(app);
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).toBe(alarm);

    // As an instance that died between its write and the handover leaves it: the event in the
    // outbox, not at the endpoint, and no alarm soon.
    const outboxRow = {
      event_id: 'evt_died',
      message_id: 'evt_died',
      app_id: app,
      type: 'NEW_NFT',
      payload: '{"type":"NEW_NFT","data":{}}',
      created_at: new Date().toISOString(),
    };
    const id = (BigInt(deliveryIds[0] as string) + (1n << 14n) * 5n).toString();
    await runInDurableObject(stub, async (_i, state) => {
      state.storage.sql.exec(
        'INSERT INTO outbox (event_id, event, targets) VALUES (?1, ?2, ?3)',
        'evt_died',
        JSON.stringify(outboxRow),
        JSON.stringify([[id, hook.id]]),
      );
      await state.storage.deleteAlarm();
    });
    await evictDurableObject(stub);
    const started = Date.now();
    const set = await runInDurableObject(stub, (_i, state) => state.storage.getAlarm());
    expect(set).not.toBeNull();
    expect(set as number).toBeGreaterThanOrEqual(started);
    expect(set as number).toBeLessThanOrEqual(Date.now() + 5_000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM outbox')).toEqual([{ n: 0 }]);
    // At its endpoint now (whose own alarm may already have sent it, once).
    const handed = await storedDelivery(hook.id, id);
    expect(handed).toMatchObject({ event_id: 'evt_died' });
    expect(['pending', 'succeeded']).toContain(handed?.status);
    expect(handed?.attempts).toBeLessThanOrEqual(1);
    expect(eventId).not.toBe('evt_died');
  });
});
