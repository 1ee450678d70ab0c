import { env, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { deliveryConfig } from '../src/core/delivery-settings';
import { admit, newSchedule, type SendSchedule } from '../src/core/send-rate';
import { sendDue } from '../src/deliveries/send';
import { insertDeliveries, rememberWebhook } from '../src/deliveries/store/sending';
import { allowedOrigins } from '../src/webhooks/url';
import { deliverDue, endpointOf, storedAttempts } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { registerWebhook } from './helpers/requests';
import { freshApp } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

let seq = 0;

/**
 * `count` deliveries stored at the webhook's endpoint, due now, as its application's object hands
 * them over but without setting the alarm: only the passes the test runs send them.
 */
async function pendingAt(webhookId: string, appId: string, count: number): Promise<string[]> {
  const now = new Date().toISOString();
  const base = (BigInt(Date.now() - 1_577_836_800_000) << 20n) + BigInt(++seq * 1000);
  const ids = Array.from({ length: count }, (_, i) => String(base + BigInt(i)));
  await runInDurableObject(endpointOf(webhookId), (_instance, state) => {
    rememberWebhook(state.storage.sql, webhookId);
    insertDeliveries(
      state.storage.sql,
      ids.map((id) => ({
        delivery_id: id,
        event_id: `evt_${id}`,
        message_id: `evt_${id}`,
        app_id: appId,
        type: 'NEW_NFT',
        payload: '{}',
        created_at: now,
      })),
    );
  });
  return ids;
}

/** The schedule the endpoint's object keeps (its own, across passes and alarms). */
const scheduleOf = (instance: unknown) => (instance as { schedule: SendSchedule }).schedule;

/**
 * One sending pass of the webhook's endpoint, in its object, with its own schedule and these
 * settings (the test env's, with `settings` changed); returns when the object should send again.
 */
function pass(webhookId: string, settings: Record<string, string> = {}): Promise<number | null> {
  return runInDurableObject(endpointOf(webhookId), (instance, state) => {
    const bindings = { ...env, ...settings } as CloudflareBindings;
    return sendDue(
      { webhookId, storage: state.storage, schedule: scheduleOf(instance) },
      bindings,
      { config: deliveryConfig(bindings), origins: allowedOrigins(bindings) },
      (input, init) => fetch(input, init),
    );
  });
}

/** Deliveries as the endpoint stores them, in the order of `ids`. */
async function stored(webhookId: string, ids: string[]) {
  const rows = await runInDurableObject(endpointOf(webhookId), (_instance, state) =>
    state.storage.sql
      .exec<{ id: string; status: string; attempts: number; next_attempt_at: string | null }>(
        `SELECT CAST(delivery_id AS TEXT) AS id, status, attempts, next_attempt_at FROM deliveries ORDER BY delivery_id`,
      )
      .toArray(),
  );
  return ids.map((id) => rows.find((r) => r.id === id));
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
  it('attempts as many as the rate allows; the others wait for their slot, neither failed nor counted, and another endpoint is not held back', async () => {
    const [a, b] = [freshApp(), freshApp()];
    const busy = await registerWebhook(a);
    const other = await registerWebhook(b);
    const busyIds = await pendingAt(busy.id, a, 5);
    await pendingAt(other.id, b, 2);
    const { requests } = receiver(() => new Response(null, { status: 204 }));
    const rate2 = { ENDPOINT_RATE_LIMIT: '2' };
    const started = Date.now();

    // One pass admits as many as the rate allows (a burst of one second's worth: 2); the first one
    // held is promised the next slot, and the pass asks to be woken then.
    const wake = await pass(busy.id, rate2);
    expect(await pass(other.id, rate2)).toBeNull();
    const hosts = requests.map((r) => new URL(r.url).host);
    expect(hosts.filter((h) => h === `${a}.example.com`)).toHaveLength(2);
    expect(hosts.filter((h) => h === `${b}.example.com`)).toHaveLength(2);
    expect(wake).not.toBeNull();
    // Only the first one held is promised a slot (the ones after it are not looked at yet).
    const promised = await runInDurableObject(endpointOf(busy.id), (instance) => [
      ...scheduleOf(instance).promised.entries(),
    ]);
    expect(promised).toEqual([[busyIds[2], wake]]);
    expect(wake! - started).toBeGreaterThanOrEqual(400);
    expect(wake! - Date.now()).toBeLessThanOrEqual(500);
    const before = await stored(busy.id, busyIds);
    expect(before.map((d) => [d?.status, d?.attempts])).toEqual([
      ['succeeded', 1],
      ['succeeded', 1],
      ['pending', 0],
      ['pending', 0],
      ['pending', 0],
    ]);
    // Held back is no attempt: nothing recorded, and still due when they were.
    for (const id of busyIds.slice(2)) expect(await storedAttempts(busy.id, id)).toEqual([]);
    for (const d of before.slice(2)) expect(Date.parse(d!.next_attempt_at!)).toBeLessThanOrEqual(started);

    // Back before the slot: still held, nothing sent, and the same slot asked for.
    expect(await pass(busy.id, rate2)).toBe(wake);
    expect(requests).toHaveLength(4);
    // Later, at the rate, each is attempted, once.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    expect(await pass(busy.id, rate2)).toBeNull();
    expect(requests).toHaveLength(7);
    expect((await stored(busy.id, busyIds)).map((d) => [d?.status, d?.attempts])).toEqual(
      busyIds.map(() => ['succeeded', 1]),
    );
  });

  it("keeps the schedule in the endpoint's own object, shared by every pass", async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    await pendingAt(hook.id, app, 3);
    const { requests } = receiver(() => new Response(null, { status: 204 }));
    const rate2 = { ENDPOINT_RATE_LIMIT: '2' };
    // Three passes, each a call of its own into the object: the rate of 2 holds across them.
    const wakes = [await pass(hook.id, rate2), await pass(hook.id, rate2), await pass(hook.id, rate2)];
    expect(requests).toHaveLength(2);
    expect(new Set(wakes).size).toBe(1);
    const next = await runInDurableObject(endpointOf(hook.id), (instance) =>
      admit(scheduleOf(instance), 'newcomer', 2, Date.now()),
    );
    expect(next).toBeGreaterThan(0);
  });

  it('applies 50 a second when ENDPOINT_RATE_LIMIT is not set, and refuses a value out of 1-1000 (deliveries wait)', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const ids = await pendingAt(hook.id, app, 3);
    const { requests } = receiver(() => new Response(null, { status: 204 }));
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});

    // The object's own sending, with ENDPOINT_RATE_LIMIT out of range: nothing is sent, the log
    // names the setting, and the alarm comes back later.
    const refused = await runInDurableObject(endpointOf(hook.id), async (instance, state) => {
      const object = instance as unknown as { env: CloudflareBindings; deliverDue(): Promise<void> };
      const own = object.env;
      object.env = { ...own, ENDPOINT_RATE_LIMIT: '1001' } as unknown as CloudflareBindings;
      try {
        const at = Date.now();
        await object.deliverDue();
        return { at, alarm: await state.storage.getAlarm() };
      } finally {
        object.env = own;
      }
    });
    expect(requests).toHaveLength(0);
    expect(error.mock.calls.some((c) => String(c[0]).includes('ENDPOINT_RATE_LIMIT'))).toBe(true);
    expect(refused.alarm! - refused.at).toBeGreaterThan(1000);
    expect((await stored(hook.id, ids)).map((d) => [d?.status, d?.attempts])).toEqual(ids.map(() => ['pending', 0]));
    // The settings a pass is given refuse it (the object logs it and waits, as above).
    await expect(pass(hook.id, { ENDPOINT_RATE_LIMIT: '0' })).rejects.toMatchObject({
      name: 'ConfigError',
      setting: 'ENDPOINT_RATE_LIMIT',
    });
    expect(requests).toHaveLength(0);

    // Not set: 50 a second, so all three at once, each 20 ms of the schedule.
    const started = Date.now();
    await deliverDue(hook.id);
    const ended = Date.now();
    expect(requests).toHaveLength(3);
    expect((await stored(hook.id, ids)).map((d) => [d?.status, d?.attempts])).toEqual(ids.map(() => ['succeeded', 1]));
    const tat = await runInDurableObject(endpointOf(hook.id), (instance) => scheduleOf(instance).tat);
    expect(tat).toBeGreaterThanOrEqual(started + 60);
    expect(tat).toBeLessThanOrEqual(ended + 60);
  });
});

describe("a webhook's own rate_limit", () => {
  it('lowers the rate for that webhook only, and never raises it above ENDPOINT_RATE_LIMIT', async () => {
    const app = freshApp();
    const slow = await registerWebhook(app, { rate_limit: 1 });
    const fast = await registerWebhook(app, { url: `https://${app}.example.com/fast`, rate_limit: 1000 });
    await pendingAt(slow.id, app, 3);
    await pendingAt(fast.id, app, 3);
    const { requests } = receiver(() => new Response(null, { status: 204 }));

    await pass(slow.id, { ENDPOINT_RATE_LIMIT: '2' });
    await pass(fast.id, { ENDPOINT_RATE_LIMIT: '2' });

    const paths = requests.map((r) => new URL(r.url).pathname);
    // rate_limit 1: one attempt now; 1000, above the service's 2: two.
    expect(paths.filter((p) => p === '/hook')).toHaveLength(1);
    expect(paths.filter((p) => p === '/fast')).toHaveLength(2);
  });
});
