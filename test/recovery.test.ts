// Recovery: POST /v1.0/app/nft/webhook/recover attempts a window's failed deliveries again.
import { runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Endpoint } from '../src/deliveries/endpoint';
import { deliverDue, endpointOf, endpointSql, storedAttempts, storedDelivery } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectEventFail, expectValue } from './helpers/replies';
import { postJson, publishDeliveries, put, registerWebhook } from './helpers/requests';
import { minutesAgo } from './helpers/time';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Makes these deliveries of the webhook failed, as if created `minutes` ago after `attempts` attempts. */
const fail = async (webhookId: string, ids: string[], minutes: number, attempts = 8) => {
  // Whatever pass of its alarm is under way ends first.
  await deliverDue(webhookId);
  await endpointSql(
    webhookId,
    `UPDATE deliveries SET status = 'failed', attempts = ?2, next_attempt_at = NULL, created_at = ?3
     WHERE delivery_id IN (SELECT CAST(value AS INTEGER) FROM json_each(?1))`,
    JSON.stringify(ids),
    attempts,
    minutesAgo(minutes),
  );
};

/** The states of a webhook's deliveries, by id. */
const states = (webhookId: string) =>
  endpointSql<{ id: string; status: string; attempts: number; schedule_start: number }>(
    webhookId,
    'SELECT CAST(delivery_id AS TEXT) AS id, status, attempts, schedule_start FROM deliveries ORDER BY delivery_id',
  );

describe('POST /v1.0/app/nft/webhook/recover', () => {
  it('attempts the failed deliveries of the window again, on a fresh schedule, and counts them', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    // The receiver fails every attempt.
    const { requests } = receiver(() => new Response(null, { status: 500 }));
    const old = await publishDeliveries(app);
    const inside = [...(await publishDeliveries(app)), ...(await publishDeliveries(app))];
    const recent = await publishDeliveries(app);
    const pending = await publishDeliveries(app);
    await fail(hook.id, old, 120);
    await fail(hook.id, inside, 60);
    await fail(hook.id, recent, 10);
    requests.length = 0;
    const { res } = await postJson(
      'recover',
      { webhook_id: hook.id, since: minutesAgo(90), until: minutesAgo(30) },
      bearer(await tokenFor(app)),
    );
    const { value } = await expectValue<{ deliveries: number }>(res, 202);
    expect(value).toEqual({ deliveries: 2 });
    // The recovered ones are due now: the endpoint attempts them, and only them.
    await deliverDue(hook.id);
    expect(requests.map((r) => r.headers['webhook-id']).sort()).toEqual(
      (await Promise.all(inside.map(async (id) => (await storedDelivery(hook.id, id))?.message_id))).sort(),
    );
    // Attempts keep counting; the schedule starts again from its first delay.
    expect(await states(hook.id)).toEqual([
      { id: old[0], status: 'failed', attempts: 8, schedule_start: 0 },
      { id: inside[0], status: 'pending', attempts: 9, schedule_start: 8 },
      { id: inside[1], status: 'pending', attempts: 9, schedule_start: 8 },
      { id: recent[0], status: 'failed', attempts: 8, schedule_start: 0 },
      { id: pending[0], status: 'pending', attempts: 1, schedule_start: 0 },
    ]);
    for (const id of inside) {
      const d = await storedDelivery(hook.id, id);
      // The first delay of the schedule (5 s), not its ninth step's.
      expect(Date.parse(d!.next_attempt_at!) - Date.parse(d!.last_attempt_at!)).toBeGreaterThanOrEqual(4_000);
      expect(Date.parse(d!.next_attempt_at!) - Date.parse(d!.last_attempt_at!)).toBeLessThanOrEqual(6_000);
    }
  });

  it('takes [since, until): a delivery created at since is in, one at until is out; until defaults to now', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response(null, { status: 500 }));
    const [a] = await publishDeliveries(app);
    const [b] = await publishDeliveries(app);
    await fail(hook.id, [a!], 60);
    await fail(hook.id, [b!], 30);
    const at = async (id: string) => (await storedDelivery(hook.id, id))?.created_at;
    const status = async (id: string) => (await storedDelivery(hook.id, id))?.status;
    const headers = bearer(await tokenFor(app));
    const first = await postJson('recover', { webhook_id: hook.id, since: await at(a!), until: await at(b!) }, headers);
    expect((await expectValue<{ deliveries: number }>(first.res, 202)).value).toEqual({ deliveries: 1 });
    expect([await status(a!), await status(b!)]).toEqual(['pending', 'failed']);
    const rest = await postJson('recover', { webhook_id: hook.id, since: minutesAgo(120) }, headers);
    expect((await expectValue<{ deliveries: number }>(rest.res, 202)).value).toEqual({ deliveries: 1 });
    expect(await status(b!)).toBe('pending');
  });

  it('never recovers or attempts a delivery twice when recoveries race', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const { requests } = receiver();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(...(await publishDeliveries(app)));
    await fail(hook.id, ids, 30);
    requests.length = 0;
    const headers = bearer(await tokenFor(app));
    const replies = await Promise.all(
      [1, 2, 3].map(() => postJson('recover', { webhook_id: hook.id, since: minutesAgo(60) }, headers)),
    );
    const counts = await Promise.all(
      replies.map(async ({ res }) => (await expectValue<{ deliveries: number }>(res, 202)).value.deliveries),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(6);
    await deliverDue(hook.id);
    await deliverDue(hook.id);
    const events = await Promise.all(ids.map(async (id) => (await storedDelivery(hook.id, id))?.message_id));
    expect(requests.map((r) => r.headers['webhook-id']).sort()).toEqual(events.sort());
    expect((await states(hook.id)).map((d) => d.status)).toEqual(ids.map(() => 'succeeded'));
  });

  it.each([
    [{ since: 'yesterday' }, 'since must be an ISO 8601 date and time with a time zone'],
    [{ since: '2026-11-23T10:00:00' }, 'since must be an ISO 8601 date and time with a time zone'],
    [{}, 'since is required'],
    [{ since: 'FUTURE' }, 'since must not be in the future'],
    [{ since: 'TOO_OLD' }, "since must be within the last 30 days (the application's retention)"],
    [{ since: 'HOUR_AGO', until: 'HOUR_AGO' }, 'until must be after since'],
    [{ since: 'HOUR_AGO', until: 'TOO_OLD' }, 'until must be after since'],
    [{ since: 'HOUR_AGO', until: 5 }, 'until must be an ISO 8601 date and time with a time zone'],
  ])('answers 400 for %j', async (window, detail) => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const times: Record<string, string> = {
      FUTURE: new Date(Date.now() + 3_600_000).toISOString(),
      TOO_OLD: new Date(Date.now() - 31 * 86_400_000).toISOString(),
      HOUR_AGO: minutesAgo(60),
    };
    const body = Object.fromEntries(
      Object.entries(window).map(([k, v]) => [k, typeof v === 'string' ? (times[v] ?? v) : v]),
    );
    const { res } = await postJson('recover', { webhook_id: hook.id, ...body }, bearer(await tokenFor(app)));
    expect(res.headers.get('x-error-detail')).toBe(detail);
    await expectEventFail(res, 400);
  });

  it('answers 409 for a disabled webhook and 404 for a foreign one, recovering nothing', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response(null, { status: 500 }));
    const ids = await publishDeliveries(app);
    await fail(hook.id, ids, 30);
    const headers = bearer(await tokenFor(app));
    await put({ webhook_id: hook.id, is_enabled: false }, headers);
    await expectEventFail(
      (await postJson('recover', { webhook_id: hook.id, since: minutesAgo(60) }, headers)).res,
      409,
    );
    const other = bearer(await tokenFor(freshApp()));
    await expectEventFail((await postJson('recover', { webhook_id: hook.id, since: minutesAgo(60) }, other)).res, 404);
    expect((await storedDelivery(hook.id, ids[0]!))?.status).toBe('failed');
  });
});

describe('Endpoint.recover (the object)', () => {
  it('recovers a delivery once: run again, with the same window, it finds nothing more', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    // The receiver fails every attempt: the recovered delivery, attempted by the alarm, stays pending.
    receiver(() => new Response(null, { status: 500 }));
    const ids = await publishDeliveries(app);
    await fail(hook.id, ids, 30, 3);
    const window = [new Date(Date.now() - 3_600_000).toISOString(), new Date(Date.now() + 1000).toISOString()] as const;
    const now = new Date().toISOString();
    const recover = () =>
      runInDurableObject(endpointOf(hook.id), (instance: Endpoint) => instance.recover(...window, now));
    expect(await recover()).toBe(1);
    expect(await recover()).toBe(0);
    // Attempted once more on its fresh schedule (the alarm's pass, or this one).
    await deliverDue(hook.id);
    expect(await storedDelivery(hook.id, ids[0]!)).toMatchObject({ status: 'pending', attempts: 4, schedule_start: 3 });
    expect(await storedAttempts(hook.id, ids[0]!)).toHaveLength(2);
  });
});
