import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { admit, newSchedule } from '../src/core/send-rate';
import { deliver } from './helpers/queues';
import { receiver } from './helpers/receiver';
import { publishEvent, registerWebhook } from './helpers/requests';
import { freshApp } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

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

/** A deliveries queue producer that keeps each message with its delay. */
function capturingQueue() {
  const sent: { body: { delivery_id: string; gen?: number }; delaySeconds?: number }[] = [];
  const binding = {
    sendBatch: async (messages: Iterable<{ body: unknown; delaySeconds?: number }>) => {
      for (const m of messages) sent.push(m as (typeof sent)[number]);
    },
  } as unknown as Queue;
  return { sent, binding };
}

describe('admit: an endpoint schedule of `rate` starts a second, with a burst of one second', () => {
  it('starts a burst of `rate` at once, then promises each next one a slot 1/rate later', () => {
    const schedule = newSchedule();
    const waits = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((id) => admit(schedule, id, 5, 10_000));
    expect(waits).toEqual([0, 0, 0, 0, 0, 200, 400]);
    // Back before its slot: still waits; at its slot: starts, once.
    expect(admit(schedule, 'f', 5, 10_100)).toBe(100);
    expect(admit(schedule, 'f', 5, 10_200)).toBe(0);
    // A newcomer queues behind the promised slots.
    expect(admit(schedule, 'h', 5, 10_200)).toBe(400);
    // Idle for a minute, the burst is one second's worth again, not sixty.
    const later = ['i', 'j', 'k', 'l', 'm', 'n'].map((id) => admit(schedule, id, 5, 70_000));
    expect(later).toEqual([0, 0, 0, 0, 0, 200]);
  });

  it('over any run of arrivals, starts at most rate x (seconds + 1), each delivery held back at most once', () => {
    const schedule = newSchedule();
    const startsAt: number[] = [];
    const waiting = new Map<string, number>();
    let next = 0;
    for (let ms = 0; ms <= 10_000; ms += 50) {
      const arriving = [...Array(4)].map(() => `d${next++}`);
      for (const [id, at] of waiting) if (at <= ms) arriving.push(id);
      for (const id of arriving) {
        const wait = admit(schedule, id, 20, ms);
        if (wait === 0) {
          startsAt.push(ms);
          waiting.delete(id);
        } else {
          expect(waiting.has(id)).toBe(false);
          waiting.set(id, ms + wait);
        }
      }
    }
    for (let from = 0; from <= 10_000; from += 250) {
      expect(startsAt.filter((t) => t >= from && t < from + 1000).length).toBeLessThanOrEqual(40);
    }
    expect(startsAt.length).toBeLessThanOrEqual(20 * 11);
    expect(startsAt.length).toBeGreaterThanOrEqual(20 * 10);
  });
});

describe('each endpoint is sent at most ENDPOINT_RATE_LIMIT attempts a second', () => {
  it('attempts as many as the rate allows; the others come back at their slot, neither failed nor counted, and another endpoint is not held back', async () => {
    const [a, b] = [freshApp(), freshApp()];
    await registerWebhook(a);
    await registerWebhook(b);
    const busyIds: string[] = [];
    for (let i = 0; i < 5; i++) busyIds.push(...(await publishEvent(a)).deliveryIds);
    const otherIds: string[] = [];
    for (let i = 0; i < 2; i++) otherIds.push(...(await publishEvent(b)).deliveryIds);
    const { requests } = receiver(() => new Response(null, { status: 204 }));
    const queue = capturingQueue();
    const started = Date.now();
    const overrides = { ENDPOINT_RATE_LIMIT: '2', DELIVERIES: queue.binding };

    const { result, ids, retries } = await deliver([...busyIds, ...otherIds], overrides);

    const hosts = requests.map((r) => new URL(r.url).host);
    expect(hosts.filter((h) => h === `${a}.example.com`)).toHaveLength(2);
    expect(hosts.filter((h) => h === `${b}.example.com`)).toHaveLength(2);
    // Every message is acknowledged: the three held back come again as new messages (a wait is
    // no retry of the queue's), after 1, 1 and 2 seconds: their slots at the endpoint's rate.
    expect(result.explicitAcks.sort()).toEqual([...ids].sort());
    expect(retries).toEqual({});
    expect(queue.sent).toEqual(
      busyIds.slice(2).map((id, i) => ({ body: { delivery_id: id }, contentType: 'json', delaySeconds: [1, 1, 2][i] })),
    );
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

    // Back before their slots: still held, nothing sent; at their slots, each is attempted.
    const early = await deliver(busyIds.slice(2), overrides);
    expect(requests).toHaveLength(4);
    expect(early.result.explicitAcks).toHaveLength(3);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    await deliver(busyIds.slice(2), overrides);
    expect(requests).toHaveLength(7);
    expect((await deliveries(busyIds)).map((d) => d.attempts)).toEqual([1, 1, 1, 1, 1]);
  });

  it("keeps the schedule in the endpoint's own object, shared by every consumer invocation", async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(...(await publishEvent(app)).deliveryIds);
    const { requests } = receiver(() => new Response(null, { status: 204 }));
    const overrides = { ENDPOINT_RATE_LIMIT: '2', DELIVERIES: capturingQueue().binding };
    // Three invocations at once, one message each: the rate of 2 holds across them.
    await Promise.all(ids.map((id) => deliver([id], overrides)));
    expect(requests).toHaveLength(2);
    const next = await runInDurableObject(env.ENDPOINTS.getByName(hook.id), (instance) =>
      (instance as unknown as { admit(ids: string[], rate: number): number[] }).admit(['newcomer'], 2),
    );
    expect(next[0]).toBeGreaterThan(0);
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

describe("a webhook's own rate_limit", () => {
  it('lowers the rate for that webhook only, and never raises it above ENDPOINT_RATE_LIMIT', async () => {
    const app = freshApp();
    await registerWebhook(app, { rate_limit: 1 });
    await registerWebhook(app, { url: `https://${app}.example.com/fast`, rate_limit: 1000 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(...(await publishEvent(app)).deliveryIds);
    const { requests } = receiver(() => new Response(null, { status: 204 }));

    await deliver(ids, { ENDPOINT_RATE_LIMIT: '2', DELIVERIES: capturingQueue().binding });

    const paths = requests.map((r) => new URL(r.url).pathname);
    // rate_limit 1: one attempt now; 1000, above the service's 2: two.
    expect(paths.filter((p) => p === '/hook')).toHaveLength(1);
    expect(paths.filter((p) => p === '/fast')).toHaveLength(2);
  });
});
