import { env, SELF } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebhookApiError, WebhookClient } from '../examples/client';
import { insertWebhook, webhookRow } from './helpers/database';
import { deliverDue, endpointSql } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { ORIGIN } from './helpers/requests';
import { tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const client = async (app: string, fetch: typeof globalThis.fetch = (input, init) => SELF.fetch(input, init)) => {
  const sleeps: number[] = [];
  const api = new WebhookClient({
    baseUrl: `${ORIGIN}/`,
    token: await tokenFor(app),
    fetch,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  return { api, sleeps };
};

describe('examples/client.ts against the Worker', () => {
  it('disables, enables and deletes, with ids as bigint, string or number', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const { api } = await client('app-a');
    await api.disable(BigInt(id));
    expect((await webhookRow(id))?.is_enabled).toBe(0);
    await api.enable(id);
    expect((await webhookRow(id))?.is_enabled).toBe(1);
    await api.delete(Number(id));
    expect(await webhookRow(id)).toBeNull();
    await api.delete(id); // idempotent
  });

  it('keeps an id above 2^53 exact', async () => {
    await insertWebhook('app-a', { id: '9007199254740992', enabled: true });
    await insertWebhook('app-a', { id: '9007199254740993', enabled: true });
    const { api } = await client('app-a');
    await api.disable(9007199254740993n);
    expect((await webhookRow('9007199254740993'))?.is_enabled).toBe(0);
    expect((await webhookRow('9007199254740992'))?.is_enabled).toBe(1);
    // biome-ignore lint/correctness/noPrecisionLoss: an inexact number is what the client must refuse
    await expect(api.disable(9007199254740993)).rejects.toThrow(TypeError);
  });

  it('raises a typed error with the status, code and reason', async () => {
    const foreign = await insertWebhook('app-b');
    const { api } = await client('app-a');
    const error = await api.delete(foreign).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WebhookApiError);
    expect(error).toMatchObject({ status: 404, code: 64063, notFound: true });
    expect((error as WebhookApiError).requestId).toBeTruthy();

    const bad = new WebhookClient({ baseUrl: ORIGIN, token: 'x.y.z', fetch: (i, init) => SELF.fetch(i, init) });
    await expect(bad.disable(1)).rejects.toMatchObject({ status: 401, code: 20004, unauthorized: true });
  });

  it('waits out Retry-After on 429 and 503, then gives up with it', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    let calls = 0;
    const flaky: typeof fetch = async (input, init) => {
      calls++;
      if (calls === 1)
        return new Response('{"return":64062,"message":"update fail"}', {
          status: 429,
          headers: { 'retry-after': '3' },
        });
      return SELF.fetch(input, init);
    };
    const { api, sleeps } = await client('app-a', flaky);
    await api.disable(id);
    expect(sleeps).toEqual([3000]);
    expect((await webhookRow(id))?.is_enabled).toBe(0);

    const down: typeof fetch = async () =>
      new Response('{"return":64063,"message":"delete fail"}', { status: 503, headers: { 'retry-after': '2' } });
    const unavailable = await client('app-a', down);
    await expect(unavailable.api.delete(id)).rejects.toMatchObject({ status: 503, retryAfter: 2 });
    expect(unavailable.sleeps).toEqual([2000, 2000]);
    expect(env.DB).toBeDefined();
  });

  it('registers, reads and lists webhooks, with exact ids and every page', async () => {
    const { api } = await client('client-list');
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await api.createWebhook(`https://hooks.example.com/client/${i}`));
    const disabled = await api.createWebhook('https://hooks.example.com/client/off', { enabled: false });
    expect(disabled.is_enabled).toBe(false);
    // Only the registration shows the signing secret; getSecret reads it again.
    const { secret, ...shown } = made[2]!;
    expect(await api.getWebhook(made[2]!.webhook_id)).toEqual(shown);
    expect(await api.getSecret(made[2]!.webhook_id)).toBe(secret);

    const all = [];
    for await (const webhook of api.webhooks({ limit: 2 })) all.push(webhook.webhook_id);
    expect(all).toEqual([...made, disabled].map((w) => w.webhook_id));
    const enabled = [];
    for await (const webhook of api.webhooks({ enabled: true, limit: 4 })) enabled.push(webhook.webhook_id);
    expect(enabled).toEqual(made.map((w) => w.webhook_id));
  });

  it('keeps an id above 2^53 exact when it reads one', async () => {
    await insertWebhook('client-big', { id: '9223372036854775000', url: 'https://hooks.example.com/big' });
    const { api } = await client('client-big');
    const webhook = await api.getWebhook('9223372036854775000');
    expect(webhook.webhook_id).toBe('9223372036854775000');
    const page = await api.listWebhooks();
    expect(page.webhooks.map((w) => w.webhook_id)).toEqual(['9223372036854775000']);
  });

  it('retries a create whose reply was lost without registering it twice (Idempotency-Key)', async () => {
    let calls = 0;
    const keys: (string | null)[] = [];
    const lossy: typeof fetch = async (input, init) => {
      calls++;
      keys.push(new Headers(init?.headers).get('idempotency-key'));
      const res = await SELF.fetch(input, init);
      if (calls === 1) throw new TypeError('connection reset after the request was sent');
      return res;
    };
    const { api } = await client('client-retry', lossy);
    const webhook = await api.createWebhook('https://hooks.example.com/once');
    expect(calls).toBe(2);
    expect(keys[0]).toBeTruthy();
    expect(keys[1]).toBe(keys[0]);
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM webhooks WHERE app_id = 'client-retry'").first();
    expect(rows?.n).toBe(1);
    expect(webhook.url).toBe('https://hooks.example.com/once');
  });

  it('sends the last bookmark with its reads', async () => {
    const seen: (string | null)[] = [];
    const spy: typeof fetch = async (input, init) => {
      seen.push(new Headers(init?.headers).get('x-d1-bookmark'));
      return SELF.fetch(input, init);
    };
    const { api } = await client('client-bookmark', spy);
    const webhook = await api.createWebhook('https://hooks.example.com/bm');
    await api.getWebhook(webhook.webhook_id);
    expect(seen[0]).toBeNull();
    expect(seen[1]).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
  });

  it('publishes events, reads the delivery log, sends test events, rotates secrets and recovers', async () => {
    const { api } = await client('client-deliveries');
    const platform = new WebhookClient({
      baseUrl: ORIGIN,
      token: await tokenFor('platform-service', { scope: 'events:publish' }),
      fetch: (input, init) => SELF.fetch(input, init),
    });
    const webhook = await api.createWebhook('https://hooks.example.com/client-log', { eventTypes: ['NEW_NFT'] });
    expect(webhook.event_types).toEqual(['NEW_NFT']);
    // The receiver is down: every attempt fails and the deliveries stay pending.
    const { requests } = receiver(() => new Response('down', { status: 503 }));
    const published: string[] = [];
    for (let i = 0; i < 3; i++) {
      published.push(await platform.publishEvent({ app_id: 'client-deliveries', type: 'NEW_NFT', data: { i } }));
    }
    // The same id is one event.
    const once = await platform.publishEvent({ app_id: 'client-deliveries', type: 'NEW_NFT', data: {}, id: 'one' });
    expect(await platform.publishEvent({ app_id: 'client-deliveries', type: 'NEW_NFT', data: {}, id: 'one' })).toBe(
      once,
    );
    const test = await api.sendTestEvent(webhook.webhook_id);
    expect(test.delivery_id).toMatch(/^\d+$/);
    await deliverDue(webhook.webhook_id);
    expect(requests).toHaveLength(5);

    const log = [];
    for await (const delivery of api.deliveries(webhook.webhook_id, { limit: 2 })) log.push(delivery);
    expect(log.map((d) => d.event_id)).toEqual([test.event_id, once, ...published.reverse()]);
    expect(log[0]).toMatchObject({ delivery_id: test.delivery_id, type: 'webhook.test', status: 'pending' });
    const one = await api.getDelivery(test.delivery_id);
    expect(one).toMatchObject({ delivery_id: test.delivery_id, attempt_log: [{ attempt: 1, status: 503 }] });

    await endpointSql(
      webhook.webhook_id,
      "UPDATE deliveries SET status = 'failed', attempts = 8, next_attempt_at = NULL WHERE app_id = 'client-deliveries'",
    );
    expect(await api.recover(webhook.webhook_id, new Date(Date.now() - 3_600_000))).toBe(5);
    const failed = [];
    for await (const delivery of api.deliveries(webhook.webhook_id, { status: 'failed' })) failed.push(delivery);
    expect(failed).toEqual([]);

    const rotated = await api.rotateSecret(webhook.webhook_id);
    expect(rotated).not.toBe(webhook.secret);
    expect(await api.getSecret(webhook.webhook_id)).toBe(rotated);
  });
});

describe('examples/client.ts: the portal operations', () => {
  it('updateWebhook changes only what it is given; stats, resend and eventTypes answer typed values', async () => {
    const app = 'client-portal';
    const { api } = await client(app);
    const hook = await api.createWebhook('https://client-portal.example.com/hook', {
      description: 'Orders',
      rateLimit: 5,
    });
    expect(hook).toMatchObject({ description: 'Orders', rate_limit: 5 });
    const changed = await api.updateWebhook(hook.webhook_id, { rateLimit: null, eventTypes: ['NEW_NFT'] });
    expect(changed).toMatchObject({ description: 'Orders', rate_limit: null, event_types: ['NEW_NFT'] });
    expect(typeof changed.webhook_id).toBe('string');
    const again = await api.updateWebhook(BigInt(hook.webhook_id), { description: 'Orders' });
    expect(again).toEqual(changed);

    receiver(() => new Response('down', { status: 503 }));
    const { delivery_id } = await api.sendTestEvent(hook.webhook_id);
    await deliverDue(hook.webhook_id);
    const stats = await api.stats(hook.webhook_id);
    expect(stats.webhook_id).toBe(hook.webhook_id);
    expect(stats.last_24h).toMatchObject({ pending: 1, attempts: 1 });
    expect(stats.hourly).toHaveLength(24);

    const resent = await api.resend(delivery_id);
    expect(resent).toMatch(/^\d+$/);
    expect(resent).not.toBe(delivery_id);
    const original = await api.getDelivery(delivery_id);
    expect((await api.getDelivery(resent)).event_id).toBe(original.event_id);

    const types = await api.eventTypes();
    expect(types.map((t) => t.type)).toContain('MEMBER_NFT_MERGE_ADD');
    expect(types.every((t) => typeof t.description === 'string' && typeof t.example === 'object')).toBe(true);
  });

  it('does not retry a resend after a 503 (it may have been made), but does after a 429', async () => {
    const app = 'client-resend-retry';
    let calls = 0;
    const { api, sleeps } = await client(app, async () => {
      calls++;
      return new Response('{"return":64064,"message":"event fail"}', {
        status: 503,
        headers: { 'retry-after': '1', 'content-type': 'application/json' },
      });
    });
    await expect(api.resend('1')).rejects.toMatchObject({ status: 503, code: 64064 });
    expect(calls).toBe(1);
    expect(sleeps).toEqual([]);
    let limitedCalls = 0;
    const limited = await client(app, async () => {
      limitedCalls++;
      return new Response('{"return":64064,"message":"event fail"}', {
        status: 429,
        headers: { 'retry-after': '1' },
      });
    });
    await expect(limited.api.resend('1')).rejects.toMatchObject({ status: 429 });
    expect(limitedCalls).toBe(3);
  });
});

describe('examples/client.ts: filters, value sets and ordering', () => {
  it('creates and changes a filter, adds, removes and pages values, and tries filters', async () => {
    const app = 'client-filters';
    const { api } = await client(app);
    const filter = { 'data.owner': { $in_set: true } };
    const hook = await api.createWebhook('https://client-filters.example.com/hook', { filter });
    expect(hook.filter).toEqual(filter);
    const owners = ['0x52908400098527886E0F7030069857D2E4169EE7', 'player-1', 'player-2'];
    expect(await api.changeValues(hook.webhook_id, { add: owners })).toBe(3);
    expect(await api.changeValues(BigInt(hook.webhook_id), { remove: ['player-2'] })).toBe(2);
    const values: string[] = [];
    for await (const value of api.values(hook.webhook_id, { limit: 1 })) values.push(value);
    expect(values).toEqual(['0x52908400098527886e0f7030069857d2e4169ee7', 'player-1']);
    const event = { type: 'NEW_NFT', data: { owner: '0x52908400098527886e0f7030069857d2e4169ee7' } };
    expect(await api.testFilter({ webhookId: hook.webhook_id, event })).toBe(true);
    expect(await api.testFilter({ filter: { 'data.owner': 'someone' }, event })).toBe(false);
    const changed = await api.updateWebhook(hook.webhook_id, { filter: null });
    expect(changed.filter).toBeNull();
    expect((await api.getWebhook(hook.webhook_id)).filter).toBeNull();
    expect(hook.ordering).toBeNull();
    const fifo = await api.createWebhook('https://client-filters.example.com/fifo', { ordering: 'fifo' });
    expect(fifo.ordering).toBe('fifo');
    expect((await api.updateWebhook(fifo.webhook_id, { ordering: null })).ordering).toBeNull();
    expect((await api.getWebhook(fifo.webhook_id)).ordering).toBeNull();
    await expect(api.changeValues(hook.webhook_id, { add: [''] })).rejects.toMatchObject({
      status: 400,
      code: 64062,
    });
  });
});

describe('examples/client.ts: the platform operations on an application', () => {
  it('sets and reads the retention, and erases the application', async () => {
    const { api } = await client('client-erased');
    const admin = new WebhookClient({
      baseUrl: ORIGIN,
      token: await tokenFor('platform-admin', { scope: 'platform:admin' }),
      fetch: (input, init) => SELF.fetch(input, init),
    });
    const webhook = await api.createWebhook('https://hooks.example.com/client-erased');
    expect(await admin.getApplication('client-erased')).toEqual({
      app_id: 'client-erased',
      retention_days: 30,
      default: true,
      erased: false,
    });
    expect(await admin.setRetention('client-erased', 14)).toMatchObject({ retention_days: 14, default: false });
    await admin.eraseApplication('client-erased');
    await vi.waitFor(async () => expect((await admin.getApplication('client-erased')).erased).toBe(true), {
      timeout: 5_000,
    });
    expect((await admin.getApplication('client-erased')).counts).toMatchObject({ webhooks: 1 });
    expect(await webhookRow(String(webhook.webhook_id))).toBeNull();
    // An application's own token may not.
    const refused = await api.getApplication('client-erased').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(WebhookApiError);
    expect(refused).toMatchObject({ status: 403, code: 64066 });
  });
});
