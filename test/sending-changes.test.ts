import { env, runInDurableObject, SELF } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { APPLICATION_SCHEMA } from '../src/events/store/schema';
import { upgradeSchema } from '../src/platform/object-schema';
import { applicationOf, applicationSql, pendingAt, sendPass, storedDelivery } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectEnvelope, expectValue } from './helpers/replies';
import { del, fetchAndWait, postJson, publishEvent, put, registerWebhook, URL_ } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const until = async (done: () => boolean) => {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(done()).toBe(true);
};

describe('a change told to the endpoint stops or changes a pass already under way', () => {
  it.each(['DELETE', 'PUT is_enabled false'])(
    '%s: after the reply only the six attempts in flight reach the receiver; the other deliveries end cancelled',
    async (how) => {
      const app = freshApp();
      const hook = await registerWebhook(app);
      const ids = await pendingAt(hook.id, app, 12);
      // A receiver that never answers: each attempt ends at the (shortened) timeout.
      const { requests } = receiver(() => new Promise<Response>(() => {}));
      const pass = sendPass(hook.id, { DELIVERY_TIMEOUT_SECONDS: '1' });
      await until(() => requests.length === 6);
      const headers = bearer(await tokenFor(app));
      const res =
        how === 'DELETE'
          ? await del(`webhook_id=${hook.id}`, headers)
          : await put({ webhook_id: hook.id, is_enabled: false }, headers);
      await expectEnvelope(res, 200, 0, 'success');
      await pass;
      expect(requests).toHaveLength(6);
      const states = await Promise.all(ids.map(async (id) => (await storedDelivery(hook.id, id))?.status));
      expect(states.slice(0, 6)).toEqual(Array(6).fill('pending'));
      expect(states.slice(6)).toEqual(Array(6).fill('cancelled'));
    },
  );

  it('PUT tells the application of each change, and its endpoint only when it disables', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const told: [string, { auditId?: number; sending?: boolean }][] = [];
    const applications = {
      getByName: () => ({ webhookChanged: async (id: string, change: object) => void told.push([id, change]) }),
    };
    const putWith = async (isEnabled: boolean) =>
      fetchAndWait(
        { APPLICATIONS: applications },
        new Request(URL_, {
          method: 'PUT',
          headers: { 'content-type': 'application/json', ...bearer(await tokenFor(app)) },
          body: JSON.stringify({ webhook_id: hook.id, is_enabled: isEnabled }),
        }),
      );
    await expectEnvelope(await putWith(false), 200, 0, 'success');
    await expectEnvelope(await putWith(false), 200, 0, 'success');
    await expectEnvelope(await putWith(true), 200, 0, 'success');
    await expectEnvelope(await putWith(true), 200, 0, 'success');
    // Each real change once, with its audit record's id; the endpoint (`sending`) both ways: its
    // passes keep the webhook they read until told.
    const { results: audit } = await env.DB.prepare(
      'SELECT audit_id, action FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER)',
    )
      .bind(hook.id)
      .all<{ audit_id: number; action: string }>();
    const idOf = (action: string) => audit.find((row) => row.action === action)?.audit_id;
    expect(told).toEqual([
      [hook.id, { auditId: idOf('disable'), sending: true }],
      [hook.id, { auditId: idOf('enable'), sending: true }],
    ]);
  });

  it('a rotated secret signs every attempt that starts after the rotation has answered', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    await pendingAt(hook.id, app, 12);
    // The first six are held until the rotation has answered, then every request is answered.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { requests } = receiver(async (_req, n) => {
      if (n <= 6) await held;
      return new Response(null, { status: 204 });
    });
    const pass = sendPass(hook.id);
    await until(() => requests.length === 6);
    const rotated = await postJson('secret', { webhook_id: hook.id }, bearer(await tokenFor(app)));
    const { value } = await expectValue<{ secret: string }>(rotated.res);
    release();
    await pass;
    expect(requests).toHaveLength(12);
    const verifies = (secret: string, req: (typeof requests)[number]) => {
      try {
        new StandardWebhook(secret).verify(req.body, req.headers);
        return true;
      } catch {
        return false;
      }
    };
    // In flight before the rotation: the old secret only. Started after it: the new one (and the old).
    for (const req of requests.slice(0, 6))
      expect([verifies(hook.secret, req), verifies(value.secret, req)]).toEqual([true, false]);
    for (const req of requests.slice(6)) {
      expect([verifies(value.secret, req), verifies(hook.secret, req)]).toEqual([true, true]);
      expect(req.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    }
  });

  it('a PATCH of the url: every attempt that starts after its reply goes to the new url', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    await pendingAt(hook.id, app, 12);
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { requests } = receiver(async (_req, n) => {
      if (n <= 6) await held;
      return new Response(null, { status: 204 });
    });
    const pass = sendPass(hook.id);
    await until(() => requests.length === 6);
    const moved = `https://moved-${app}.example.com/hook`;
    const res = await SELF.fetch(`${URL_}`, {
      method: 'PATCH',
      headers: { ...bearer(await tokenFor(app)), 'content-type': 'application/json' },
      body: JSON.stringify({ webhook_id: hook.id, url: moved }),
    });
    expect(res.status).toBe(200);
    release();
    // The pass under way sends nothing more to the old url; the passes after it send to the new one.
    for (let next = await pass; next !== null && requests.length < 12; next = await sendPass(hook.id)) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
    }
    expect(requests).toHaveLength(12);
    expect(requests.slice(0, 6).map((r) => r.url)).toEqual(Array(6).fill(`https://${app}.example.com/hook`));
    expect(requests.slice(6).map((r) => r.url)).toEqual(Array(6).fill(moved));
  });

  it("is relayed by the application's object, which notes each endpoint it handed deliveries to (an upgraded object from its index)", async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const idle = await registerWebhook(app, { url: `https://idle-${app}.example.com/hook` });
    expect(await applicationSql(app, 'SELECT webhook_id FROM endpoints')).toEqual([]);
    await publishEvent(app);
    await publishEvent(app);
    const noted = await applicationSql(app, 'SELECT webhook_id FROM endpoints ORDER BY webhook_id');
    expect(noted).toEqual(
      [{ webhook_id: hook.id }, { webhook_id: idle.id }].sort((a, b) => a.webhook_id.localeCompare(b.webhook_id)),
    );
    // An object written before the note existed fills it from its deliveries' index, once.
    const upgraded = await runInDurableObject(applicationOf(freshApp()), (_instance, state) => {
      const { sql } = state.storage;
      // At version 1, the release before's tables.
      sql.exec('DROP TABLE endpoints');
      sql.exec('DROP TABLE webhook_values');
      sql.exec('DROP TABLE value_counts');
      sql.exec('DROP TABLE dedupe');
      sql.exec('DROP TABLE journeys');
      sql.exec('DELETE FROM schema_version');
      sql.exec('INSERT INTO schema_version (version) VALUES (1)');
      sql.exec(`INSERT INTO deliveries (delivery_id, webhook_id, created_at) VALUES
        (1, '77', '2026-11-01T00:00:00Z'), (2, '77', '2026-11-01T00:00:00Z'), (3, '78', '2026-11-01T00:00:00Z')`);
      upgradeSchema(state.storage, APPLICATION_SCHEMA);
      upgradeSchema(state.storage, APPLICATION_SCHEMA);
      return sql.exec('SELECT webhook_id, n FROM endpoints ORDER BY webhook_id').toArray();
    });
    // Numbered in the order of their ids (what delivery ids made from then on carry).
    expect(upgraded).toEqual([
      { webhook_id: '77', n: 1 },
      { webhook_id: '78', n: 2 },
    ]);
  });
});
