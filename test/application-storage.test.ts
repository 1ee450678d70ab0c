// A full application fails alone: when one application's object cannot store more, its publishes
// answer 503 with Retry-After and store nothing, and other applications publish and receive as before.
import { runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Endpoint } from '../src/deliveries/endpoint';
import type { Application } from '../src/events/application';
import { applicationOf, applicationSql, deliverDue, endpointOf, endpointSql } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectEnvelope, expectValue } from './helpers/replies';
import { fetchAndWait, registerWebhook } from './helpers/requests';
import { bearer, freshApp, platformToken } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Makes the application's object fail every write as SQLite does when its database is full. */
async function fill(appId: string) {
  await runInDurableObject(applicationOf(appId), (_instance, state) => {
    vi.spyOn(state.storage, 'transactionSync').mockImplementation(() => {
      throw new Error('SQLITE_FULL: database or disk is full');
    });
  });
}

const publish = async (body: unknown, path = 'event') =>
  fetchAndWait(
    {},
    new Request(`https://webhooks.test/v1.0/platform/nft/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(await platformToken()) },
      body: JSON.stringify(body),
    }),
  );

describe('an application whose storage is full', () => {
  it('answers its publishes 503 with Retry-After, stores nothing, and other applications publish and receive as before', async () => {
    const full = freshApp();
    const other = freshApp();
    const fullHook = await registerWebhook(full);
    const otherHook = await registerWebhook(other);
    const { requests } = receiver(() => new Response('ok'));
    await fill(full);

    const refused = await publish({ app_id: full, type: 'NEW_NFT', data: { n: 1 }, id: 'e1' });
    await expectEnvelope(refused, 503, 64064, 'event fail');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const batch = await publish(
      {
        events: [
          { app_id: other, type: 'NEW_NFT', data: { n: 2 }, id: 'b1' },
          { app_id: full, type: 'NEW_NFT', data: { n: 3 }, id: 'b2' },
        ],
      },
      'events',
    );
    expect(batch.status).toBe(503);
    expect(Number(batch.headers.get('retry-after'))).toBeGreaterThan(0);

    // Nothing of the full application's is stored, at its object or its endpoint.
    expect(await applicationSql(full, 'SELECT COUNT(*) AS n FROM dedupe')).toEqual([{ n: 0 }]);
    expect(await endpointSql(fullHook.id, 'SELECT COUNT(*) AS n FROM deliveries')).toEqual([{ n: 0 }]);

    // The other application publishes and receives as before.
    const ok = await publish({ app_id: other, type: 'NEW_NFT', data: { n: 4 } });
    const { value } = await expectValue<{ event_id: string }>(ok, 202);
    await deliverDue(otherHook.id);
    const received = requests.map((r) => r.headers['webhook-id']);
    expect(received).toContain(value.event_id);
    expect(requests.every((r) => r.url === `https://${other}.example.com/hook`)).toBe(true);

    // The batch sent again once the application has room: the other application's event is not stored twice.
    vi.restoreAllMocks();
    const again = await publish(
      {
        events: [
          { app_id: other, type: 'NEW_NFT', data: { n: 2 }, id: 'b1' },
          { app_id: full, type: 'NEW_NFT', data: { n: 3 }, id: 'b2' },
        ],
      },
      'events',
    );
    await expectValue(again, 202);
    expect(await applicationSql(other, "SELECT COUNT(*) AS n FROM dedupe WHERE source_key = 'id:b1'")).toEqual([
      { n: 1 },
    ]);
    expect(await applicationSql(full, 'SELECT COUNT(*) AS n FROM dedupe')).toEqual([{ n: 1 }]);
  });
});

describe("an endpoint's object that cannot take its deliveries", () => {
  it("leaves them in the application's outbox, answers the publish, and its alarm hands them over later", async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const other = await registerWebhook(app, { url: `https://${app}.example.com/other` });
    await runInDurableObject(endpointOf(hook.id), (instance: Endpoint) => {
      vi.spyOn(instance, 'handOver').mockRejectedValue(new Error('overloaded'));
    });

    const res = await publish({ app_id: app, type: 'NEW_NFT', data: { n: 1 } });
    const { value } = await expectValue<{ event_id: string }>(res, 202);
    // The other endpoint took its delivery; the outbox keeps only the one that failed.
    const [left] = await applicationSql<{ event_id: string; targets: string }>(
      app,
      'SELECT event_id, targets FROM outbox',
    );
    expect(left?.event_id).toBe(value.event_id);
    expect((JSON.parse(left!.targets) as string[][]).map(([, webhookId]) => webhookId)).toEqual([hook.id]);
    expect(await endpointSql(hook.id, 'SELECT COUNT(*) AS n FROM deliveries')).toEqual([{ n: 0 }]);
    expect(await endpointSql(other.id, 'SELECT event_id FROM deliveries')).toEqual([{ event_id: value.event_id }]);

    vi.restoreAllMocks();
    const { requests } = receiver(() => new Response('ok'));
    await runInDurableObject(applicationOf(app), (instance: Application) => instance.alarm());
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM outbox')).toEqual([{ n: 0 }]);
    expect(await endpointSql(hook.id, 'SELECT event_id FROM deliveries')).toEqual([{ event_id: value.event_id }]);
    await deliverDue(hook.id);
    expect(
      requests.filter((r) => r.url === `https://${app}.example.com/hook`).map((r) => r.headers['webhook-id']),
    ).toEqual([value.event_id]);
  });
});
