// Retention per application: what its objects keep follows the retention the platform set
// (PUT /v1.0/platform/nft/application), a shorter one applied by their next alarm (at once), a
// longer one keeping what DELIVERY_RETENTION_DAYS would delete; recovery's window follows it.
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { adminHeaders, callApplication } from './helpers/applications';
import { applicationOf, applicationSql, deliverDue, endpointOf, endpointSql } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectEventFail, expectValue } from './helpers/replies';
import { postJson, publishEvent, registerWebhook } from './helpers/requests';
import { daysAgo } from './helpers/time';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const HOUR_MS = 3_600_000;

const setRetention = async (app: string, days: number) =>
  expectValue(await callApplication('PUT', await adminHeaders(), { body: { app_id: app, retention_days: days } }));

/** An application with one webhook and two events delivered; the first as if stored `days` ago. */
async function withOldEvent(days: number) {
  const app = freshApp();
  receiver();
  const hook = await registerWebhook(app);
  const old = await publishEvent(app);
  const fresh = await publishEvent(app);
  await deliverDue(hook.id);
  const at = daysAgo(days);
  const oldDelivery = old.deliveryIds[0] as string;
  // The application's object keeps no row per event or delivery; the old event's rows as an object
  // of the release before kept them (which the retention deletes too).
  await applicationSql(
    app,
    'INSERT INTO events (event_id, source_key, created_at) VALUES (?1, NULL, ?2)',
    old.eventId,
    at,
  );
  await applicationSql(
    app,
    'INSERT INTO deliveries (delivery_id, webhook_id, created_at) VALUES (CAST(?1 AS INTEGER), ?2, ?3)',
    oldDelivery,
    hook.id,
    at,
  );
  await endpointSql(
    hook.id,
    'UPDATE deliveries SET created_at = ?1 WHERE delivery_id = CAST(?2 AS INTEGER)',
    at,
    oldDelivery,
  );
  await endpointSql(
    hook.id,
    'UPDATE delivery_attempts SET attempted_at = ?1 WHERE delivery_id = CAST(?2 AS INTEGER)',
    at,
    oldDelivery,
  );
  return { app, hook, old, fresh };
}

/**
 * What the application's objects hold: event ids and index rows of the release before (new events
 * and deliveries leave none in the application's object), the endpoint's deliveries and attempts.
 */
async function held(app: string, webhookId: string) {
  const ids = <T extends Record<string, unknown>>(rows: T[], key: keyof T) => rows.map((r) => String(r[key])).sort();
  return {
    events: ids(await applicationSql<{ event_id: string }>(app, 'SELECT event_id FROM events'), 'event_id'),
    index: ids(
      await applicationSql<{ id: string }>(app, 'SELECT CAST(delivery_id AS TEXT) AS id FROM deliveries'),
      'id',
    ),
    deliveries: ids(
      await endpointSql<{ id: string }>(webhookId, 'SELECT CAST(delivery_id AS TEXT) AS id FROM deliveries'),
      'id',
    ),
    attempts: ids(
      await endpointSql<{ id: string }>(webhookId, 'SELECT CAST(delivery_id AS TEXT) AS id FROM delivery_attempts'),
      'id',
    ),
  };
}

/** The objects' alarms ring (as they would by themselves), the endpoint's an hour after its last purge. */
async function ringAlarms(app: string, webhookId: string) {
  await runDurableObjectAlarm(applicationOf(app));
  await runInDurableObject(endpointOf(webhookId), (instance) => {
    (instance as unknown as { purgedAt: number }).purgedAt -= HOUR_MS;
  });
  await runInDurableObject(endpointOf(webhookId), (_i, state) => state.storage.setAlarm(Date.now()));
  await runDurableObjectAlarm(endpointOf(webhookId));
}

describe('retention per application', () => {
  it('deletes events, deliveries and attempts past a shorter retention at the next alarms, set to ring within the hour', async () => {
    const { app, hook, old, fresh } = await withOldEvent(10);
    const before = await held(app, hook.id);
    expect(before.events).toEqual([old.eventId]);
    expect(before.index).toEqual(old.deliveryIds);
    expect(before.attempts).toContain(old.deliveryIds[0]);
    await setRetention(app, 5);
    // The objects' alarms ring at once, by themselves, and apply it.
    await vi.waitFor(
      async () =>
        expect(await held(app, hook.id)).toEqual({
          events: [],
          index: [],
          deliveries: fresh.deliveryIds,
          attempts: fresh.deliveryIds,
        }),
      { timeout: 5_000, interval: 100 },
    );
  });

  it('keeps what DELIVERY_RETENTION_DAYS would delete when the retention is longer', async () => {
    const kept = await withOldEvent(100);
    await setRetention(kept.app, 400);
    const gone = await withOldEvent(100);
    await ringAlarms(kept.app, kept.hook.id);
    await ringAlarms(gone.app, gone.hook.id);
    expect((await held(kept.app, kept.hook.id)).deliveries).toEqual(
      [...kept.old.deliveryIds, ...kept.fresh.deliveryIds].sort(),
    );
    expect((await held(kept.app, kept.hook.id)).events).toEqual([kept.old.eventId]);
    // The default (30 days) deletes it.
    expect(await held(gone.app, gone.hook.id)).toEqual({
      events: [],
      index: [],
      deliveries: gone.fresh.deliveryIds,
      attempts: gone.fresh.deliveryIds,
    });
  });
});

describe('POST /v1.0/app/nft/webhook/recover within the application retention', () => {
  it('takes a since within the retention the platform set, and refuses one past it', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const headers = bearer(await tokenFor(app));
    const tooOld = await postJson('recover', { webhook_id: hook.id, since: daysAgo(60) }, headers);
    expect(tooOld.res.headers.get('x-error-detail')).toBe(
      "since must be within the last 30 days (the application's retention)",
    );
    await expectEventFail(tooOld.res, 400);
    await setRetention(app, 90);
    const { res } = await postJson('recover', { webhook_id: hook.id, since: daysAgo(60) }, headers);
    expect((await expectValue<{ deliveries: number }>(res, 202)).value).toEqual({ deliveries: 0 });
    const past = await postJson('recover', { webhook_id: hook.id, since: daysAgo(91) }, headers);
    expect(past.res.headers.get('x-error-detail')).toBe(
      "since must be within the last 90 days (the application's retention)",
    );
    await expectEventFail(past.res, 400);
  });
});

describe('retention per application: a backlog', () => {
  it('deletes more than one step of rows past a shorter retention, step after step, at once', async () => {
    const app = freshApp();
    receiver();
    const hook = await registerWebhook(app);
    const fresh = await publishEvent(app);
    await deliverDue(hook.id);
    // 2,500 events and deliveries (each with an attempt) as if stored 10 days ago: more than two steps.
    const at = daysAgo(10);
    await applicationSql(
      app,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
       INSERT INTO events (event_id, source_key, created_at) SELECT 'evt_old_' || i, NULL, ?1 FROM n`,
      at,
    );
    await endpointSql(
      hook.id,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
       INSERT INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, created_at)
       SELECT i, 'evt_old_' || i, 'evt_old_' || i, ?2, 'NEW_NFT', '{}', 'succeeded', ?1 FROM n`,
      at,
      app,
    );
    await endpointSql(
      hook.id,
      `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, duration_ms)
       SELECT delivery_id, 1, created_at, 200, 1 FROM deliveries WHERE delivery_id <= 2500`,
    );
    await setRetention(app, 5);
    await vi.waitFor(
      async () =>
        expect(await held(app, hook.id)).toEqual({
          events: [],
          index: [],
          deliveries: fresh.deliveryIds,
          attempts: fresh.deliveryIds,
        }),
      { timeout: 10_000, interval: 200 },
    );
  });
});
