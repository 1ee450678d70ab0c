// Recovery: POST /v1.0/app/nft/webhook/recover attempts a window's failed deliveries again.
import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { recoverDeliveries } from '../src/deliveries/store/recovery';
import { consume, DELIVERIES_QUEUE } from './helpers/queues';
import { receiver } from './helpers/receiver';
import { expectEventFail, expectValue } from './helpers/replies';
import { postJson, publishDeliveries, put, registerWebhook } from './helpers/requests';
import { minutesAgo } from './helpers/time';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('POST /v1.0/app/nft/webhook/recover', () => {
  /** Makes these deliveries failed, as if created `minutes` ago after `attempts` attempts. */
  const fail = (ids: string[], minutes: number, attempts = 8) =>
    env.DB.prepare(
      `UPDATE deliveries SET status = 'failed', attempts = ?2, next_attempt_at = NULL, created_at = ?3
       WHERE delivery_id IN (SELECT value FROM json_each(?1))`,
    )
      .bind(JSON.stringify(ids.map(Number)), attempts, minutesAgo(minutes))
      .run();

  it('attempts the failed deliveries of the window again, on a fresh schedule, and counts them', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const old = await publishDeliveries(app);
    const inside = [...(await publishDeliveries(app)), ...(await publishDeliveries(app))];
    const recent = await publishDeliveries(app);
    const pending = await publishDeliveries(app);
    await fail(old, 120);
    await fail(inside, 60);
    await fail(recent, 10);
    const { res, sent } = await postJson(
      'recover',
      { webhook_id: hook.id, since: minutesAgo(90), until: minutesAgo(30) },
      bearer(await tokenFor(app)),
    );
    const { value } = await expectValue<{ deliveries: number }>(res, 202);
    expect(value).toEqual({ deliveries: 2 });
    // In a new queue generation: any old message of theirs is dropped.
    expect(sent.sort((a, b) => Number(a.delivery_id) - Number(b.delivery_id))).toEqual(
      inside.map((delivery_id) => ({ delivery_id, gen: 1 })),
    );
    const states = await env.DB.prepare(
      'SELECT CAST(delivery_id AS TEXT) AS id, status, attempts, schedule_start FROM deliveries WHERE webhook_id = ?1 ORDER BY delivery_id',
    )
      .bind(hook.id)
      .all();
    expect(states.results).toEqual([
      { id: old[0], status: 'failed', attempts: 8, schedule_start: 0 },
      { id: inside[0], status: 'pending', attempts: 8, schedule_start: 8 },
      { id: inside[1], status: 'pending', attempts: 8, schedule_start: 8 },
      { id: recent[0], status: 'failed', attempts: 8, schedule_start: 0 },
      { id: pending[0], status: 'pending', attempts: 0, schedule_start: 0 },
    ]);
    // Attempts keep counting; the schedule starts again from its first delay.
    receiver(() => new Response(null, { status: 500 }));
    const { retries } = await consume(DELIVERIES_QUEUE, [{ delivery_id: inside[0], gen: 1 }]);
    expect(Object.values(retries)).toEqual([5]);
    expect(
      await env.DB.prepare('SELECT attempts FROM deliveries WHERE delivery_id = ?1').bind(inside[0]).first('attempts'),
    ).toBe(9);
  });

  it('takes [since, until): a delivery created at since is in, one at until is out; until defaults to now', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const [a] = await publishDeliveries(app);
    const [b] = await publishDeliveries(app);
    await fail([a!], 60);
    await fail([b!], 30);
    const at = (id: string) =>
      env.DB.prepare('SELECT created_at FROM deliveries WHERE delivery_id = ?1').bind(id).first<string>('created_at');
    const headers = bearer(await tokenFor(app));
    const first = await postJson('recover', { webhook_id: hook.id, since: await at(a!), until: await at(b!) }, headers);
    expect((await expectValue<{ deliveries: number }>(first.res, 202)).value).toEqual({ deliveries: 1 });
    expect(first.sent).toEqual([{ delivery_id: a, gen: 1 }]);
    const rest = await postJson('recover', { webhook_id: hook.id, since: minutesAgo(120) }, headers);
    expect((await expectValue<{ deliveries: number }>(rest.res, 202)).value).toEqual({ deliveries: 1 });
    expect(rest.sent).toEqual([{ delivery_id: b, gen: 1 }]);
  });

  it('never queues a delivery twice when recoveries race', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(...(await publishDeliveries(app)));
    await fail(ids, 30);
    const headers = bearer(await tokenFor(app));
    const replies = await Promise.all(
      [1, 2, 3].map(() => postJson('recover', { webhook_id: hook.id, since: minutesAgo(60) }, headers)),
    );
    const counts = await Promise.all(
      replies.map(async ({ res }) => (await expectValue<{ deliveries: number }>(res, 202)).value.deliveries),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(6);
    expect(replies.flatMap((r) => r.sent.map((m) => m.delivery_id)).sort()).toEqual([...ids].sort());
  });

  it.each([
    [{ since: 'yesterday' }, 'since must be an ISO 8601 date and time with a time zone'],
    [{ since: '2026-11-23T10:00:00' }, 'since must be an ISO 8601 date and time with a time zone'],
    [{}, 'since is required'],
    [{ since: 'FUTURE' }, 'since must not be in the future'],
    [{ since: 'TOO_OLD' }, 'since must be within the last 30 days (DELIVERY_RETENTION_DAYS)'],
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
    const { res, sent } = await postJson('recover', { webhook_id: hook.id, ...body }, bearer(await tokenFor(app)));
    expect(res.headers.get('x-error-detail')).toBe(detail);
    await expectEventFail(res, 400);
    expect(sent).toEqual([]);
  });

  it('answers 409 for a disabled webhook and 404 for a foreign one, recovering nothing', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const ids = await publishDeliveries(app);
    await fail(ids, 30);
    const headers = bearer(await tokenFor(app));
    await put({ webhook_id: hook.id, is_enabled: false }, headers);
    await expectEventFail(
      (await postJson('recover', { webhook_id: hook.id, since: minutesAgo(60) }, headers)).res,
      409,
    );
    const other = bearer(await tokenFor(freshApp()));
    await expectEventFail((await postJson('recover', { webhook_id: hook.id, since: minutesAgo(60) }, other)).res, 404);
    expect(
      await env.DB.prepare('SELECT status FROM deliveries WHERE delivery_id = ?1').bind(ids[0]).first('status'),
    ).toBe('failed');
  });
});

describe('recoverDeliveries (the store)', () => {
  it('finds what it recovered when its batch runs again after committing', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const ids = await publishDeliveries(app);
    await env.DB.prepare(
      `UPDATE deliveries SET status = 'failed', attempts = 3, next_attempt_at = NULL WHERE delivery_id = ?1`,
    )
      .bind(ids[0])
      .run();
    const window = [new Date(Date.now() - 3_600_000).toISOString(), new Date(Date.now() + 1000).toISOString()] as const;
    const now = new Date().toISOString();
    const first = await recoverDeliveries(env.DB, hook.id, app, ...window, now, 'recovery-1');
    const again = await recoverDeliveries(env.DB, hook.id, app, ...window, now, 'recovery-1');
    expect(first).toEqual({ outcome: 'recovered', deliveries: [{ id: ids[0], gen: 1 }] });
    expect(again).toEqual(first);
    // Another request recovers nothing more.
    expect(await recoverDeliveries(env.DB, hook.id, app, ...window, now, 'recovery-2')).toEqual({
      outcome: 'recovered',
      deliveries: [],
    });
  });
});
