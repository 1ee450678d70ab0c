// Delivery ids carry their endpoint: the application's object finds a delivery by its id alone,
// with no row per delivery; and publishing is idempotent per source key within
// EVENT_DEDUPE_HOURS only.
import { runDurableObjectAlarm } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { deliveryConfig } from '../src/core/delivery-settings';
import { ConfigError } from '../src/core/errors';
import { applicationOf, applicationSql, endpointSql } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectQueryFail, expectValue } from './helpers/replies';
import { eventRequest, fetchAndWait, ORIGIN, publishEvent, put, readLog, registerWebhook } from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

const CARRIED = 2n ** 52n;
const resend = async (app: string, deliveryId: string) =>
  fetchAndWait(
    {},
    new Request(`${ORIGIN}/v1.0/app/nft/webhook/delivery/resend`, {
      method: 'POST',
      headers: { ...bearer(await tokenFor(app)), 'content-type': 'application/json' },
      body: `{"delivery_id":${deliveryId}}`,
    }),
  );

/** Publishes `{id}` for `app`; returns the event id answered. */
async function publishId(app: string, id: string): Promise<string> {
  const res = await fetchAndWait(
    {},
    eventRequest({ app_id: app, type: 'NEW_NFT', data: {}, id }, bearer(await platformToken())),
  );
  return (await expectValue<{ event_id: string }>(res, 202)).value.event_id;
}

describe('a delivery id', () => {
  it('carries its endpoint: found by GET and resend with no row per delivery in the application', async () => {
    const app = freshApp();
    const [a, b] = [await registerWebhook(app), await registerWebhook(app, { url: `https://${app}.example.com/b` })];
    receiver();
    const { deliveryIds } = await publishEvent(app);
    expect(deliveryIds).toHaveLength(2);
    for (const id of deliveryIds) {
      expect(BigInt(id)).toBeGreaterThanOrEqual(CARRIED);
      expect(BigInt(id)).toBeLessThanOrEqual(BigInt(Number.MAX_SAFE_INTEGER));
    }
    // One event: one sequence number, two endpoint numbers.
    const [first, second] = deliveryIds.map(BigInt) as [bigint, bigint];
    expect((first - CARRIED) >> 14n).toBe((second - CARRIED) >> 14n);
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM deliveries')).toEqual([{ n: 0 }]);
    expect(await applicationSql(app, 'SELECT webhook_id, n FROM endpoints ORDER BY n')).toEqual([
      { webhook_id: a.id, n: 1 },
      { webhook_id: b.id, n: 2 },
    ]);

    const headers = bearer(await tokenFor(app));
    for (const [hook, id] of [
      [a, deliveryIds[0]],
      [b, deliveryIds[1]],
    ] as const) {
      const res = await readLog(`delivery_id=${id}`, headers);
      const text = await res.text();
      expect(res.status).toBe(200);
      expect(text).toContain(`"delivery_id":${id},`);
      expect(
        await endpointSql(
          hook.id,
          'SELECT COUNT(*) AS n FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER)',
          id as string,
        ),
      ).toEqual([{ n: 1 }]);
    }
    const again = await resend(app, deliveryIds[0] as string);
    const made = /"delivery_id":(\d+)/.exec(await again.text())?.[1] as string;
    expect(again.status).toBe(202);
    expect(BigInt(made)).toBeGreaterThan(BigInt(deliveryIds[1] as string));
    expect(await applicationOf(app).locate(made)).toBe(a.id);
  });

  it('of a delivery that does not exist is 404, on GET and on resend, even when its webhook is disabled', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver();
    const { deliveryIds } = await publishEvent(app);
    const missing = (BigInt(deliveryIds[0] as string) + (1n << 14n) * 1000n).toString();
    const headers = bearer(await tokenFor(app));
    await expectQueryFail(await readLog(`delivery_id=${missing}`, headers), 404);
    await put({ webhook_id: hook.id, is_enabled: false }, headers);
    const res = await resend(app, missing);
    expect(res.status).toBe(404);
    // Another application's delivery is not found by this one.
    const other = freshApp();
    await expectQueryFail(await readLog(`delivery_id=${deliveryIds[0]}`, bearer(await tokenFor(other))), 404);
  });
});

describe('EVENT_DEDUPE_HOURS', () => {
  it('keeps publishing idempotent per id within it; past it the same id is a new event, and the key is forgotten', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver();
    const first = await publishId(app, 'again');
    expect(await publishId(app, 'again')).toBe(first);
    expect(await endpointSql(hook.id, 'SELECT COUNT(*) AS n FROM deliveries')).toEqual([{ n: 1 }]);

    // 73 hours later (the default window is 72): the same id makes a new event and a new delivery.
    const past = new Date(Date.now() - 73 * 3_600_000).toISOString();
    await applicationSql(app, 'UPDATE dedupe SET created_at = ?1', past);
    const second = await publishId(app, 'again');
    expect(second).not.toBe(first);
    expect(await endpointSql(hook.id, 'SELECT event_id FROM deliveries ORDER BY delivery_id')).toEqual([
      { event_id: first },
      { event_id: second },
    ]);
    expect(await applicationSql(app, 'SELECT source_key, event_id FROM dedupe')).toEqual([
      { source_key: 'id:again', event_id: second },
    ]);

    // The alarm forgets keys past the window: the application keeps nothing of those events.
    await publishId(app, 'old');
    await applicationSql(app, `UPDATE dedupe SET created_at = ?1 WHERE source_key = 'id:old'`, past);
    await runDurableObjectAlarm(applicationOf(app));
    expect(await applicationSql(app, 'SELECT source_key FROM dedupe')).toEqual([{ source_key: 'id:again' }]);
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM events')).toEqual([{ n: 0 }]);
  });

  it('defaults to 72 hours, at most the retention, and refuses a value above the retention', () => {
    expect(deliveryConfig({}).dedupeHours).toBe(72);
    expect(deliveryConfig({ DELIVERY_RETENTION_DAYS: '1' }).dedupeHours).toBe(24);
    expect(deliveryConfig({ EVENT_DEDUPE_HOURS: '5' }).dedupeHours).toBe(5);
    expect(() => deliveryConfig({ DELIVERY_RETENTION_DAYS: '2', EVENT_DEDUPE_HOURS: '49' })).toThrow(ConfigError);
    expect(() => deliveryConfig({ EVENT_DEDUPE_HOURS: '0' })).toThrow(ConfigError);
  });
});
