import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { WebhookApiError, WebhookClient } from '../examples/client';
import { insertWebhook, ORIGIN, tokenFor, webhookRow } from './helpers';

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
});
