// Test events: POST /v1.0/app/nft/webhook/test sends a signed test event to one webhook.
import { env } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { insertWebhook } from './helpers/database';
import { deliver } from './helpers/queues';
import { receiver } from './helpers/receiver';
import { expectEventFail, expectValue } from './helpers/replies';
import { postJson, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('POST /v1.0/app/nft/webhook/test', () => {
  it('sends one signed test event to that webhook only, whatever its event_types', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app, { event_types: ['MOD_NFT'] });
    const other = await registerWebhook(app, { url: `https://${app}.example.com/other` });
    const { res, sent } = await postJson('test', { webhook_id: hook.id }, bearer(await tokenFor(app)));
    const { value } = await expectValue<{ event_id: string; delivery_id: number }>(res, 202);
    expect(Object.keys(value)).toEqual(['event_id', 'delivery_id']);
    expect(sent).toEqual([{ delivery_id: String(value.delivery_id) }]);
    const rows = await env.DB.prepare('SELECT CAST(webhook_id AS TEXT) AS w FROM deliveries WHERE event_id = ?1')
      .bind(value.event_id)
      .all();
    expect(rows.results).toEqual([{ w: hook.id }]);
    expect(other.id).not.toBe(hook.id);

    const { requests } = receiver();
    await deliver([String(value.delivery_id)]);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.headers['webhook-id']).toBe(value.event_id);
    expect(new StandardWebhook(hook.secret).verify(requests[0]!.body, requests[0]!.headers)).toEqual({
      type: 'webhook.test',
      timestamp: expect.any(String),
      data: {},
    });
  });

  it('takes another type, as a JSON integer or a decimal string id', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const { res } = await postJson(
      'test',
      `{"webhook_id": ${hook.id}, "type": "NEW_NFT"}`,
      bearer(await tokenFor(app)),
    );
    const { value } = await expectValue<{ event_id: string }>(res, 202);
    expect(await env.DB.prepare('SELECT type FROM events WHERE event_id = ?1').bind(value.event_id).first('type')).toBe(
      'NEW_NFT',
    );
  });

  it('answers 409 for a disabled webhook, 404 for a foreign one, 400 for bad input; nothing stored', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const off = await registerWebhook(app, { is_enabled: false });
    const foreign = await insertWebhook(freshApp());
    const count = () => env.DB.prepare('SELECT COUNT(*) AS n FROM events').first('n');
    const before = await count();
    await expectEventFail((await postJson('test', { webhook_id: off.id }, headers)).res, 409);
    await expectEventFail((await postJson('test', { webhook_id: foreign }, headers)).res, 404);
    await expectEventFail((await postJson('test', { webhook_id: off.id, type: 'bad type' }, headers)).res, 400);
    await expectEventFail((await postJson('test', { webhook_id: 1.5 }, headers)).res, 400);
    await expectEventFail((await postJson('test', {}, headers)).res, 400);
    expect(await count()).toBe(before);
  });
});

describe('an invalid delivery setting', () => {
  it.each([
    ['DELIVERY_RETRY_SCHEDULE', '2s 13h'],
    ['DELIVERY_RETENTION_DAYS', '0'],
  ])('%s=%s: test events and recover both answer 500 naming it, storing and queueing nothing', async (name, bad) => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    const hook = await registerWebhook(app);
    const headers = bearer(await tokenFor(app));
    const events = () => env.DB.prepare('SELECT COUNT(*) AS n FROM events WHERE app_id = ?1').bind(app).first('n');
    const since = new Date(Date.now() - 3_600_000).toISOString();
    for (const [path, body] of [
      ['test', { webhook_id: hook.id }],
      ['recover', { webhook_id: hook.id, since }],
    ] as const) {
      error.mockClear();
      const { res, sent } = await postJson(path, body, headers, { [name]: bad });
      await expectEventFail(res, 500);
      expect(sent, path).toEqual([]);
      expect(error.mock.calls.map((c) => String(c[0])).join('\n'), path).toContain(`configuration error: ${name}: `);
    }
    expect(await events()).toBe(0);
  });
});
