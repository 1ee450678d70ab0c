import { runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { admit, newSchedule } from '../src/core/send-rate';
import { deliverDue, endpointOf, sendPass as pass, pendingAt, scheduleOf, storedAttempts } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { registerWebhook } from './helpers/requests';
import { freshApp } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

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

describe('admit: an endpoint schedule of at most `rate` starts in any second', () => {
  it('starts `rate` at once, then promises each next one the first slot its second has room for', () => {
    const schedule = newSchedule();
    const waits = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((id) => admit(schedule, id, 5, 10_000));
    expect(waits).toEqual([0, 0, 0, 0, 0, 1000, 1000]);
    // Back before its slot: still waits; at its slot: starts, once.
    expect(admit(schedule, 'f', 5, 10_500)).toBe(500);
    expect(admit(schedule, 'f', 5, 11_000)).toBe(0);
    // Newcomers fill the second from 11,000 (f and g have two of its five), then wait for the next.
    expect(['h', 'i', 'j', 'k'].map((id) => admit(schedule, id, 5, 11_000))).toEqual([0, 0, 0, 1000]);
    // Idle for a minute, `rate` at once again, not sixty seconds' worth.
    const later = ['l', 'm', 'n', 'o', 'p', 'q'].map((id) => admit(schedule, id, 5, 70_000));
    expect(later).toEqual([0, 0, 0, 0, 0, 1000]);
  });

  it('over any run of arrivals, starts at most rate in any second, each delivery held back at most once', () => {
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
    // Every window of one second, wherever it starts (a token bucket let twice the rate through).
    for (const from of startsAt) {
      expect(startsAt.filter((t) => t >= from && t < from + 1000).length).toBeLessThanOrEqual(20);
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

    // One pass admits as many as the rate allows (2 in this second); the first one held is
    // promised the next slot, and the pass asks to be woken then.
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
    expect(wake! - started).toBeGreaterThanOrEqual(1000);
    expect(wake! - Date.now()).toBeLessThanOrEqual(1000);
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
    for (let next = wake; next !== null; next = await pass(busy.id, rate2)) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, (next as number) - Date.now())));
    }
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

    // Not set: 50 a second, so all three at once, each a start of the window.
    const started = Date.now();
    await deliverDue(hook.id);
    const ended = Date.now();
    expect(requests).toHaveLength(3);
    expect((await stored(hook.id, ids)).map((d) => [d?.status, d?.attempts])).toEqual(ids.map(() => ['succeeded', 1]));
    const starts = await runInDurableObject(endpointOf(hook.id), (instance) => scheduleOf(instance).starts);
    expect(starts).toHaveLength(3);
    for (const at of starts) expect(at >= started && at <= ended).toBe(true);
  });
});

describe("a webhook's own rate_limit", () => {
  it('lowers the rate for that webhook only, and never raises it above ENDPOINT_RATE_LIMIT', async () => {
    const app = freshApp();
    const slow = await registerWebhook(app, { rate_limit: 1 });
    // Another host: one host's rate is shared by the application's webhooks there.
    const fast = await registerWebhook(app, { url: `https://fast-${app}.example.com/fast`, rate_limit: 1000 });
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

/** The most arrivals within any one second (half-open), wherever it starts. */
const busiestSecond = (times: number[]) =>
  Math.max(0, ...times.map((t) => times.filter((u) => u >= t && u < t + 1000).length));

/** Runs these endpoints' passes side by side, each woken when it asks, for `ms`. */
async function sendFor(ms: number, webhookIds: string[], settings: Record<string, string> = {}) {
  const end = Date.now() + ms;
  await Promise.all(
    webhookIds.map(async (id) => {
      while (Date.now() < end) {
        const next = await pass(id, settings);
        if (next === null) return;
        await new Promise((resolve) => setTimeout(resolve, Math.max(5, Math.min(next, end) - Date.now())));
      }
    }),
  );
}

describe('in any one second, an endpoint receives at most its rate (+1 when both ends count)', () => {
  it('a default endpoint with a backlog of 120: at most 50 a second, not 100 (a token bucket after an idle second)', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    await pendingAt(hook.id, app, 120);
    const times: number[] = [];
    receiver(() => {
      times.push(Date.now());
      return new Response(null, { status: 204 });
    });
    await sendFor(2500, [hook.id]);
    expect(times.length).toBeGreaterThanOrEqual(100);
    expect(busiestSecond(times)).toBeLessThanOrEqual(50);
  });
});

describe("one host's rate, summed over the application's webhooks there", () => {
  it('five near-identical URLs of one application share ENDPOINT_RATE_LIMIT at their host; another host and application have their own', async () => {
    const app = freshApp();
    const other = freshApp();
    const rate = { ENDPOINT_RATE_LIMIT: '10' };
    const hooks = [];
    for (const path of ['/hook', '/hook/', '/hook?a', '/Hook', '/hook#x'.replace('#x', '?b')]) {
      hooks.push(await registerWebhook(app, { url: `https://${app}.example.com${path}` }));
    }
    const elsewhere = await registerWebhook(app, { url: `https://other-${app}.example.com/hook` });
    const foreign = await registerWebhook(other, { url: `https://${app}.example.com/theirs` });
    for (const hook of [...hooks, elsewhere]) await pendingAt(hook.id, app, 10);
    await pendingAt(foreign.id, other, 10);
    const times = new Map<string, number[]>();
    receiver((req) => {
      const key = req.url.includes('/theirs') ? 'foreign' : new URL(req.url).host;
      times.set(key, [...(times.get(key) ?? []), Date.now()]);
      return new Response(null, { status: 204 });
    });
    await sendFor(
      2200,
      [...hooks, elsewhere, foreign].map((h) => h.id),
      rate,
    );
    const atHost = times.get(`${app}.example.com`) ?? [];
    // 50 due at once: without the host's budget, 50 in the first second.
    expect(atHost.length).toBeGreaterThanOrEqual(10);
    expect(busiestSecond(atHost)).toBeLessThanOrEqual(10);
    // The other host, and the other application at the same host, were not held back by it.
    expect(times.get(`other-${app}.example.com`)).toHaveLength(10);
    expect(times.get('foreign')).toHaveLength(10);
  });
});
