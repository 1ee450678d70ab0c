// DELETE /v1.0/platform/nft/application: an application's erasure. 202 at once; then nothing is
// left of it in D1 (webhooks, secrets, Idempotency-Keys), in its objects (events, deliveries,
// attempts, counters, value sets, alarms) or in R2 (its archives); its audit records stay without
// URLs or descriptions, with one record of what was erased. A run that dies is finished by the Cron.
import { createScheduledController, env, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import worker from '../src/index';
import { adminHeaders, applicationAudit, applicationRow, appQuery, callApplication } from './helpers/applications';
import { applicationOf, applicationSql, deliverDue, endpointOf } from './helpers/objects';
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
