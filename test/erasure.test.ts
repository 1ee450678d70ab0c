// DELETE /v1.0/platform/nft/application: an application's erasure. 202 at once; then nothing is
// left of it in D1 (webhooks, secrets, Idempotency-Keys), in its objects (events, deliveries,
// attempts, counters, value sets, alarms) or in R2 (its archives); its audit records stay without
// URLs or descriptions, with one record of what was erased. A run that dies is finished by the Cron.
// The platform's operational endpoint keeps nothing of it either: its deliveries there, their
// attempts, slim rows and archive index go, and nothing of it is archived there again.
import { createScheduledController, env, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PLATFORM_ENDPOINT } from '../src/core/operational-settings';
import { archivePass } from '../src/deliveries/archive';
import worker from '../src/index';
import { adminHeaders, applicationAudit, applicationRow, appQuery, callApplication } from './helpers/applications';
import { applicationOf, applicationSql, deliverDue, endpointOf, endpointSql } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectApplicationFail, expectEnvelope, expectSuccess, expectValue } from './helpers/replies';
import { del, eventRequest, fetchWith, post, postJson, publishEvent, registerWebhook } from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Everything an object stores: its tables' rows, its key-value pairs, its alarm. */
const storedIn = (stub: DurableObjectStub) =>
  runInDurableObject(stub, async (_instance, state) => {
    const tables = state.storage.sql
      .exec<{ name: string }>(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'
           AND name <> 'schema_version'`,
      )
      .toArray()
      .map((t) => t.name);
    const rows = Object.fromEntries(
      tables.map((t) => [t, state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM "${t}"`).one().n]),
    );
    return { rows, kv: [...state.storage.kv.list()].map(([k]) => k), alarm: await state.storage.getAlarm() };
  });

const nothingIn = (rows: Record<string, number>) => Object.fromEntries(Object.keys(rows).map((t) => [t, 0]));

/** The application's rows in D1's webhook tables. */
async function inD1(app: string) {
  const count = (sql: string) =>
    env.DB.prepare(sql)
      .bind(app)
      .first<{ n: number }>()
      .then((r) => r?.n);
  return {
    webhooks: await count('SELECT COUNT(*) AS n FROM webhooks WHERE app_id = ?1'),
    keys: await count('SELECT COUNT(*) AS n FROM idempotency_keys WHERE app_id = ?1'),
  };
}

const auditOf = async (app: string) =>
  (
    await env.DB.prepare('SELECT action, row_before FROM webhook_audit WHERE app_id = ?1 ORDER BY audit_id')
      .bind(app)
      .all<{ action: string; row_before: string }>()
  ).results.map((r) => ({ action: r.action, row: JSON.parse(r.row_before) as Record<string, unknown> }));

const archiveKeys = async (prefix: string) => (await env.HISTORY.list({ prefix })).objects.map((o) => o.key).sort();

const erase = async (app: string, overrides: Record<string, unknown> = {}) =>
  callApplication('DELETE', await adminHeaders(), { query: appQuery(app) }, overrides);

const read = async (app: string) =>
  (
    await expectValue<Record<string, unknown>>(
      await callApplication('GET', await adminHeaders(), { query: appQuery(app) }),
    )
  ).value;

/**
 * An application with what the service holds for one: two webhooks (one with a description, one
 * registered under an Idempotency-Key, with a value set), a third deleted (its endpoint still holds
 * its deliveries), events delivered, and archives in R2.
 */
async function populated(app: string) {
  receiver();
  const headers = bearer(await tokenFor(app));
  const described = await registerWebhook(app, { description: 'Order desk' });
  const keyed = await expectValue<{ webhook_id: number }>(
    await post({ url: `https://${app}.example.com/keyed` }, { ...headers, 'idempotency-key': 'k1' }),
    201,
  );
  const keyedId = String(keyed.value.webhook_id);
  await expectValue((await postJson('values', { webhook_id: keyedId, add: ['0xabc', '0xdef'] }, headers)).res);
  const deleted = await registerWebhook(app, { url: `https://${app}.example.com/old` });
  await publishEvent(app);
  await publishEvent(app);
  await deliverDue(described.id, keyedId, deleted.id);
  await expectSuccess(await del(`webhook_id=${deleted.id}`, headers));
  const prefix = `${encodeURIComponent(app)}/`;
  for (const key of [`${prefix}${described.id}/0001`, `${prefix}${deleted.id}/0001`, `${prefix}${deleted.id}/0002`]) {
    await env.HISTORY.put(key, 'archived');
  }
  return { webhooks: [described.id, keyedId, deleted.id], prefix };
}

/**
 * Operational events of `app` at the platform's operational endpoint, as it keeps them: each made
 * `minutesAgo`, attempted `attempts` times, ending `status`. Returns their message ids.
 */
async function operationalOf(app: string, deliveries: { status: string; attempts: number }[]) {
  const platform = endpointOf(PLATFORM_ENDPOINT);
  const created = new Date(Date.now() - 3_600_000).toISOString();
  const ids: string[] = [];
  for (const [i, d] of deliveries.entries()) {
    const id = `evt_${app}_${i}`;
    await platform.handOverOperational({
      event_id: id,
      message_id: id,
      app_id: app,
      type: 'endpoint.disabled',
      payload: JSON.stringify({ type: 'endpoint.disabled', data: { app_id: app } }),
      created_at: created,
    });
    for (let n = 1; n <= d.attempts; n++) {
      await endpointSql(
        PLATFORM_ENDPOINT,
        `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
         SELECT delivery_id, ?2, ?3, 500, NULL, 5, 'no' FROM deliveries WHERE message_id = ?1`,
        id,
        n,
        created,
      );
    }
    await endpointSql(
      PLATFORM_ENDPOINT,
      `UPDATE deliveries SET status = ?2, attempts = ?3, last_attempt_at = ?4,
         next_attempt_at = CASE WHEN ?2 = 'pending' THEN ?5 ELSE NULL END WHERE message_id = ?1`,
      id,
      d.status,
      d.attempts,
      created,
      new Date(Date.now() + 3_600_000).toISOString(),
    );
    ids.push(id);
  }
  // Only this test's passes run there.
  await runInDurableObject(platform, (_, state) => state.storage.deleteAlarm());
  return ids;
}

/** One archiving pass of the platform's endpoint, of what ended before now; how many moved. */
const archiveOperational = () =>
  runInDurableObject(
    endpointOf(PLATFORM_ENDPOINT),
    async (_, state) =>
      (await archivePass(state.storage, env.HISTORY, PLATFORM_ENDPOINT, new Date().toISOString())).moved,
  );

/** What the platform's endpoint holds of `app`: its deliveries, their attempts, archive index and slim rows. */
async function operationalHeld(app: string) {
  const prefix = `${encodeURIComponent(app)}/`;
  const [row] = await endpointSql<Record<string, number>>(
    PLATFORM_ENDPOINT,
    `SELECT (SELECT COUNT(*) FROM deliveries WHERE app_id = ?1) AS deliveries,
       (SELECT COUNT(*) FROM delivery_attempts WHERE delivery_id IN
          (SELECT delivery_id FROM deliveries WHERE app_id = ?1)) AS attempts,
       (SELECT COUNT(*) FROM archive_objects WHERE substr(key, 1, length(?2)) = ?2) AS objects,
       (SELECT COUNT(*) FROM archived WHERE object_id IN
          (SELECT object_id FROM archive_objects WHERE substr(key, 1, length(?2)) = ?2)) AS archived`,
    app,
    prefix,
  );
  return { ...row, r2: await archiveKeys(prefix) };
}

describe('DELETE /v1.0/platform/nft/application', () => {
  it('answers 202 and erases everything the service holds for the application, keeping its audit without URLs', async () => {
    const app = freshApp();
    const other = freshApp();
    const { webhooks, prefix } = await populated(app);
    // Another application's archive, and one whose id starts with this one's.
    await env.HISTORY.put(`${encodeURIComponent(other)}/1/0001`, 'kept');
    await env.HISTORY.put(`${encodeURIComponent(`${app}x`)}/1/0001`, 'kept');
    const otherHook = await registerWebhook(other);
    expect((await storedIn(endpointOf(webhooks[0] as string))).rows.deliveries).toBe(2);

    await expectEnvelope(await erase(app), 202, 0, 'success');

    expect(await inD1(app)).toEqual({ webhooks: 0, keys: 0 });
    for (const id of webhooks) {
      const left = await storedIn(endpointOf(id));
      expect(left).toEqual({ rows: nothingIn(left.rows), kv: [], alarm: null });
    }
    const appLeft = await storedIn(applicationOf(app));
    expect(appLeft).toEqual({ rows: nothingIn(appLeft.rows), kv: ['erased'], alarm: null });
    expect(await archiveKeys(prefix)).toEqual([]);
    expect(await archiveKeys(`${encodeURIComponent(other)}/`)).toHaveLength(1);
    expect(await archiveKeys(`${encodeURIComponent(`${app}x`)}/`)).toHaveLength(1);
    expect(await inD1(other)).toEqual({ webhooks: 1, keys: 0 });
    expect(otherHook.id).toMatch(/^\d+$/);

    // The audit stays, without URLs or descriptions; one record says what was erased.
    const audit = await auditOf(app);
    expect(audit.map((a) => a.action)).toEqual(['create', 'create', 'create', 'delete']);
    for (const { row } of audit) {
      expect(row).not.toHaveProperty('url');
      expect(row).not.toHaveProperty('description');
      expect(row).not.toHaveProperty('destination');
      expect(row).not.toHaveProperty('headers');
      expect(row.app_id).toBe(app);
    }
    const counts = {
      webhooks: 2,
      idempotency_keys: 1,
      audit_records: 4,
      events: 2,
      deliveries: 6,
      attempts: 6,
      values: 2,
      archives: 3,
    };
    const records = await applicationAudit(app);
    expect(records.map((r) => [r.action, r.detail, r.actor])).toEqual([['erase', counts, 'platform-admin']]);
    const value = await read(app);
    expect(value).toMatchObject({ app_id: app, retention_days: 30, default: true, erased: true, counts });
    expect(Date.parse(value.erased_at as string)).toBeGreaterThanOrEqual(
      Date.parse(value.erasure_requested_at as string),
    );
  });

  it("erases its rows at the platform's operational endpoint, counted, and nothing of it is archived there again", async () => {
    const app = freshApp();
    const other = freshApp();
    const platform = endpointOf(PLATFORM_ENDPOINT);
    // Two delivered and archived, one ended (failed, still hot), one pending; the other
    // application's: one archived, one pending.
    await operationalOf(app, [
      { status: 'succeeded', attempts: 1 },
      { status: 'succeeded', attempts: 1 },
    ]);
    await operationalOf(other, [{ status: 'succeeded', attempts: 1 }]);
    while ((await archiveOperational()) > 0);
    await operationalOf(app, [
      { status: 'failed', attempts: 2 },
      { status: 'pending', attempts: 1 },
    ]);
    await operationalOf(other, [{ status: 'pending', attempts: 1 }]);
    const before = await operationalHeld(app);
    expect(before).toMatchObject({ deliveries: 2, attempts: 3, objects: 1, archived: 2 });
    expect(before.r2).toHaveLength(1);
    const otherBefore = await operationalHeld(other);
    expect(otherBefore).toMatchObject({ deliveries: 1, attempts: 1, objects: 1, archived: 1 });

    await expectEnvelope(await erase(app), 202, 0, 'success');

    expect(await operationalHeld(app)).toEqual({ deliveries: 0, attempts: 0, objects: 0, archived: 0, r2: [] });
    expect(await operationalHeld(other)).toEqual(otherBefore);
    // What was erased there is counted: its two hot deliveries and their three attempts, its one
    // archive object.
    expect((await read(app)).counts).toEqual({
      webhooks: 0,
      idempotency_keys: 0,
      audit_records: 0,
      events: 0,
      deliveries: 2,
      attempts: 3,
      values: 0,
      archives: 1,
    });
    // The platform's endpoint sends and archives on: nothing of the erased application is written.
    await platform.deliverDue();
    await runInDurableObject(platform, (_, state) => state.storage.deleteAlarm());
    while ((await archiveOperational()) > 0);
    expect(await operationalHeld(app)).toEqual({ deliveries: 0, attempts: 0, objects: 0, archived: 0, r2: [] });
    // The other application's archived delivery still reads from the platform's log.
    const [kept] = await endpointSql<{ key: string }>(
      PLATFORM_ENDPOINT,
      'SELECT key FROM archive_objects WHERE substr(key, 1, length(?1)) = ?1',
      `${encodeURIComponent(other)}/`,
    );
    expect(await env.HISTORY.head(kept!.key)).not.toBeNull();
  });

  it('waits for an operational event being made in its object: nothing of it reaches the platform after', async () => {
    const app = freshApp();
    receiver();
    const hook = await registerWebhook(app);
    // The object makes the event with the platform's endpoint set, its read of D1 held back.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reads = 0;
    const db = {
      prepare: (query: string) => {
        const statement = env.DB.prepare(query);
        return {
          bind: (...values: unknown[]) => {
            const bound = statement.bind(...values);
            return {
              all: async () => {
                reads++;
                await held;
                return bound.all();
              },
            };
          },
        };
      },
    };
    await runInDurableObject(applicationOf(app), (instance) => {
      const object = instance as unknown as { env: CloudflareBindings };
      object.env = {
        ...object.env,
        DB: db,
        OPERATIONAL_WEBHOOK_URL: 'https://ops.platform.example.com/operational',
        OPERATIONAL_WEBHOOK_SECRET: `whsec_${btoa('platform-operational-secret-0123')}`,
      } as unknown as CloudflareBindings;
    });
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const told = applicationOf(app).operational([
      { appId: app, webhookId: hook.id, type: 'secret.rotated', data: { webhook_id: hook.id, expires_at: null } },
    ]);
    for (let i = 0; i < 100 && reads === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(reads).toBe(1);
    const erased = erase(app);
    // The erasure reaches the object (and waits there), or, were it not to wait, ends.
    for (let i = 0; i < 200; i++) {
      const erasing = await runInDurableObject(
        applicationOf(app),
        (instance) => (instance as unknown as { erasing: number }).erasing,
      );
      if (erasing > 0 || (await applicationRow(app))?.erased_at) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    release();
    await told;
    await expectEnvelope(await erased, 202, 0, 'success');
    expect((await read(app)).erased).toBe(true);
    expect(await operationalHeld(app)).toEqual({ deliveries: 0, attempts: 0, objects: 0, archived: 0, r2: [] });
  });

  it('is harmless a second time: 202, nothing more deleted, the counts kept', async () => {
    const app = freshApp();
    await populated(app);
    await expectEnvelope(await erase(app), 202, 0, 'success');
    const first = await read(app);
    await expectEnvelope(await erase(app), 202, 0, 'success');
    const second = await read(app);
    expect(second.erased).toBe(true);
    expect(second.counts).toEqual(first.counts);
    expect((await applicationAudit(app)).map((r) => r.detail)).toEqual([first.counts, first.counts]);
  });

  it('keeps the retention the platform set', async () => {
    const app = freshApp();
    await populated(app);
    await expectValue(
      await callApplication('PUT', await adminHeaders(), { body: { app_id: app, retention_days: 45 } }),
    );
    expect((await erase(app)).status).toBe(202);
    expect(await read(app)).toMatchObject({ retention_days: 45, default: false, erased: true });
    expect(await runInDurableObject(applicationOf(app), (instance) => instance.retentionDays())).toBe(45);
  });

  it('leaves publishing to the erased application storing and sending nothing until it has webhooks again', async () => {
    const app = freshApp();
    await populated(app);
    expect((await erase(app)).status).toBe(202);
    const { requests } = receiver();
    const { eventId } = await publishEvent(app);
    expect(eventId).toMatch(/^evt_/);
    expect(requests).toEqual([]);
    expect(await applicationSql(app, 'SELECT event_id FROM events UNION ALL SELECT event_id FROM dedupe')).toEqual([]);
    expect((await storedIn(applicationOf(app))).kv).toEqual(['erased']);
    // A new webhook: publishing stores and delivers again.
    const hook = await registerWebhook(app, { url: `https://${app}.example.com/new` });
    const again = await publishEvent(app);
    await deliverDue(hook.id);
    expect(again.deliveryIds).toHaveLength(1);
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual([again.eventId]);
    expect((await storedIn(applicationOf(app))).kv).toEqual([]);
  });

  it("refuses publishes while the application's objects are being erased (503: the sender tries again)", async () => {
    const app = freshApp();
    receiver();
    await registerWebhook(app);
    await runInDurableObject(applicationOf(app), (instance) => {
      (instance as unknown as { erasing: number }).erasing = 1;
    });
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const res = await fetchWith(
      {},
      eventRequest({ app_id: app, type: 'NEW_NFT', data: {} }, bearer(await platformToken())),
    );
    expect(res.headers.get('retry-after')).toBe('2');
    await expectEnvelope(res, 503, 64064, 'event fail');
    expect(await applicationSql(app, 'SELECT event_id FROM events')).toEqual([]);
    await runInDurableObject(applicationOf(app), (instance) => {
      (instance as unknown as { erasing: number }).erasing = 0;
    });
  });

  it('is finished by the Cron Trigger when its own run dies', async () => {
    const app = freshApp();
    const { prefix } = await populated(app);
    const failing = { list: () => Promise.reject(new Error('R2 unavailable')) };
    await expectEnvelope(await erase(app, { HISTORY: failing }), 202, 0, 'success');
    // The run stopped at R2: the webhooks are gone already, the erasure not done.
    expect(await inD1(app)).toEqual({ webhooks: 0, keys: 0 });
    const pending = await read(app);
    expect(pending).toMatchObject({ erased: false });
    expect(pending.erasure_requested_at).toEqual(expect.any(String));
    expect(await archiveKeys(prefix)).toHaveLength(3);
    expect(await applicationAudit(app)).toEqual([]);
    // A second DELETE while it is under way asks for nothing new.
    await expectEnvelope(await erase(app, { HISTORY: failing }), 202, 0, 'success');
    expect((await read(app)).erasure_requested_at).toBe(pending.erasure_requested_at);

    await worker.scheduled(createScheduledController({ cron: '* * * * *' }), env);
    expect(await archiveKeys(prefix)).toEqual([]);
    const done = await read(app);
    expect(done).toMatchObject({ erased: true });
    expect(done.counts).toMatchObject({ webhooks: 2, events: 2, deliveries: 6, archives: 3 });
    expect((await applicationAudit(app)).map((r) => r.action)).toEqual(['erase']);
    expect((await applicationRow(app))?.erased_at).toEqual(expect.any(String));
  });

  it.each([
    ['', 'app_id is required'],
    ['app_id=', 'app_id must be a string of 1 to 255 characters'],
    ['app_id=a&app_id=b', 'app_id must be given once'],
  ])('answers 400 for %j, erasing nothing', async (query, detail) => {
    const app = freshApp();
    receiver();
    const hook = await registerWebhook(app);
    const res = await callApplication('DELETE', await adminHeaders(), { query });
    expect(res.headers.get('x-error-detail')).toMatch(new RegExp(`^${detail}`));
    await expectApplicationFail(res, 400);
    expect(await inD1(app)).toEqual({ webhooks: 1, keys: 0 });
    expect(await applicationRow(app)).toBeNull();
    expect(hook.id).toMatch(/^\d+$/);
  });
});
