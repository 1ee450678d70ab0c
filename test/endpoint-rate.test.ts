import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Bucket, takeTokens } from '../src/core/token-bucket';
import { deliver, publishEvent, receiver, registerWebhook } from './helpers';

afterEach(() => {
  vi.restoreAllMocks();
});

let seq = 0;
const freshApp = () => `rate-app-${++seq}`;

/** Deliveries as stored, by id. */
async function deliveries(ids: string[]) {
  const { results } = await env.DB.prepare(
    `SELECT CAST(delivery_id AS TEXT) AS id, status, attempts, next_attempt_at FROM deliveries
     WHERE delivery_id IN (SELECT CAST(value AS INTEGER) FROM json_each(?1)) ORDER BY delivery_id`,
  )
    .bind(JSON.stringify(ids))
    .all<{ id: string; status: string; attempts: number; next_attempt_at: string | null }>();
  return results;
}

describe('takeTokens: a token bucket with a burst of one second', () => {
  it('grants a full burst of `rate` at first, then `rate` a second, never more', () => {
    const first = takeTokens(null, 5, 8, 0);
    expect(first.granted).toBe(5);
    expect(takeTokens(first.bucket, 5, 8, 0).granted).toBe(0);
    expect(takeTokens(first.bucket, 5, 8, 399).granted).toBe(1);
    expect(takeTokens(first.bucket, 5, 8, 400).granted).toBe(2);
    // Idle for a minute, it holds one second's worth, not sixty.
    expect(takeTokens(first.bucket, 5, 1000, 60_000).granted).toBe(5);
  });

  it('over any run of calls, grants at most rate x (seconds + 1)', () => {
    let bucket: Bucket | null = null;
    let granted = 0;
    for (let ms = 0; ms <= 10_000; ms += 37) {
      const taken = takeTokens(bucket, 20, 7, ms);
      bucket = taken.bucket;
      granted += taken.granted;
    }
    expect(granted).toBeLessThanOrEqual(20 * 11);
    expect(granted).toBeGreaterThanOrEqual(20 * 10);
  });
});

describe('each endpoint is sent at most ENDPOINT_RATE_LIMIT attempts a second', () => {
  it('attempts as many as the rate allows; the others wait, neither failed nor counted, and another endpoint is not held back', async () => {
    const [a, b] = [freshApp(), freshApp()];
    const busy = await registerWebhook(a);
    await registerWebhook(b);
    const busyIds: string[] = [];
    for (let i = 0; i < 5; i++) busyIds.push(...(await publishEvent(a)).deliveryIds);
    const otherIds: string[] = [];
    for (let i = 0; i < 2; i++) otherIds.push(...(await publishEvent(b)).deliveryIds);
    const { requests } = receiver(() => new Response(null, { status: 204 }));
    const started = Date.now();

    const { result, ids, retries } = await deliver([...busyIds, ...otherIds], { ENDPOINT_RATE_LIMIT: '2' });

    const hosts = requests.map((r) => new URL(r.url).host);
    expect(hosts.filter((h) => h === `${a}.example.com`)).toHaveLength(2);
    expect(hosts.filter((h) => h === `${b}.example.com`)).toHaveLength(2);
    expect(result.explicitAcks.sort()).toEqual([ids[0], ids[1], ids[5], ids[6]].sort());
    // The three held back come again after 1, 1 and 2 seconds: the endpoint's rate, spread.
    expect([ids[2], ids[3], ids[4]].map((id) => retries[id as string])).toEqual([1, 1, 2]);
    const stored = await deliveries(busyIds);
    expect(stored.map((d) => [d.status, d.attempts])).toEqual([
      ['succeeded', 1],
      ['succeeded', 1],
      ['pending', 0],
      ['pending', 0],
      ['pending', 0],
    ]);
    for (const d of stored.slice(2)) {
      const wait = Date.parse(d.next_attempt_at as string) - started;
      expect(wait).toBeGreaterThanOrEqual(900);
      expect(wait).toBeLessThan(4000);
    }

    // At once again: the bucket is empty, so nothing more is sent to that endpoint.
    const again = await deliver(busyIds.slice(2), { ENDPOINT_RATE_LIMIT: '2' });
    expect(requests).toHaveLength(4);
    expect(Object.values(again.retries).every((s) => (s as number) >= 1)).toBe(true);
    expect((await deliveries(busyIds.slice(2))).map((d) => d.attempts)).toEqual([0, 0, 0]);
  });

  it("keeps the bucket in the endpoint's own object, shared by every consumer invocation", async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(...(await publishEvent(app)).deliveryIds);
    receiver(() => new Response(null, { status: 204 }));
    // Two invocations at once, one message each of three: the rate of 2 holds across them.
    const runs = await Promise.all([
      deliver([ids[0] as string], { ENDPOINT_RATE_LIMIT: '2' }),
      deliver([ids[1] as string], { ENDPOINT_RATE_LIMIT: '2' }),
      deliver([ids[2] as string], { ENDPOINT_RATE_LIMIT: '2' }),
    ]);
    expect(runs.filter((r) => r.result.explicitAcks.length === 1)).toHaveLength(2);
    const left = await runInDurableObject(env.ENDPOINTS.getByName(hook.id), (instance) =>
      (instance as unknown as { take(want: number, rate: number): number }).take(1, 2),
    );
    expect(left).toBe(0);
  });

  it('applies 50 a second when ENDPOINT_RATE_LIMIT is not set, and refuses a value out of 1-1000 (deliveries wait)', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(...(await publishEvent(app)).deliveryIds);
    const { requests } = receiver(() => new Response(null, { status: 204 }));
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});

    const refused = await deliver(ids, { ENDPOINT_RATE_LIMIT: '1001' });
    expect(requests).toHaveLength(0);
    expect(refused.result.retryBatch.retry).toBe(true);
    expect(error.mock.calls.some((c) => String(c[0]).includes('ENDPOINT_RATE_LIMIT'))).toBe(true);

    const { result } = await deliver(ids);
    expect(requests).toHaveLength(3);
    expect(result.explicitAcks).toHaveLength(3);
  });
});
