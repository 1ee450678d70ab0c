// Test events: POST /v1.0/app/nft/webhook/test sends a signed test event to one webhook.
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OPERATIONAL_TYPES } from '../src/core/event-types';
import { appState } from './helpers/app-state';
import { insertWebhook } from './helpers/database';
import { deliverDue, storedDelivery } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectEventFail, expectValue } from './helpers/replies';
import { postJson, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** The reply's delivery_id, exact (a JSON integer that may lie above 2^53). */
const exactDeliveryId = (text: string) => /"delivery_id":(\d+)/.exec(text)?.[1] as string;

describe('POST /v1.0/app/nft/webhook/test', () => {
  it('sends one signed test event to that webhook only, whatever its event_types', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app, { event_types: ['MOD_NFT'] });
    const other = await registerWebhook(app, { url: `https://${app}.example.com/other` });
    const { requests } = receiver();
    const { res } = await postJson('test', { webhook_id: hook.id }, bearer(await tokenFor(app)));
    const { value, text } = await expectValue<{ event_id: string; delivery_id: number }>(res, 202);
    expect(Object.keys(value)).toEqual(['event_id', 'delivery_id']);
    expect(typeof value.delivery_id).toBe('number');
    const deliveryId = exactDeliveryId(text);
    const { events, deliveries } = await appState(app);
    expect(events).toMatchObject([{ event_id: value.event_id, source_key: null }]);
    expect(deliveries.map((d) => [d.delivery_id, d.webhook_id, d.event_id, d.type])).toEqual([
      [deliveryId, hook.id, value.event_id, 'webhook.test'],
    ]);
    expect(other.id).not.toBe(hook.id);

    await deliverDue(hook.id, other.id);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe(`https://${app}.example.com/hook`);
    expect((await storedDelivery(hook.id, deliveryId))?.status).toBe('succeeded');
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
    const { value, text } = await expectValue<{ event_id: string }>(res, 202);
    expect(await storedDelivery(hook.id, exactDeliveryId(text))).toMatchObject({
      event_id: value.event_id,
      type: 'NEW_NFT',
    });
  });

  it('answers 409 for a disabled webhook, 404 for a foreign one, 400 for bad input; nothing stored', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const off = await registerWebhook(app, { is_enabled: false });
    const foreignApp = freshApp();
    const foreign = await insertWebhook(foreignApp);
    const count = async () => ({ mine: await appState(app), theirs: await appState(foreignApp) });
    const before = await count();
    await expectEventFail((await postJson('test', { webhook_id: off.id }, headers)).res, 409);
    await expectEventFail((await postJson('test', { webhook_id: foreign }, headers)).res, 404);
    await expectEventFail((await postJson('test', { webhook_id: off.id, type: 'bad type' }, headers)).res, 400);
    await expectEventFail((await postJson('test', { webhook_id: 1.5 }, headers)).res, 400);
    await expectEventFail((await postJson('test', {}, headers)).res, 400);
    expect(await count()).toEqual(before);
  });
});

describe('test events of the operational types', () => {
  it.each(OPERATIONAL_TYPES)(
    '%s is refused as publishing refuses it: 400, 64064, nothing stored or sent',
    async (type) => {
      const app = freshApp();
      const hook = await registerWebhook(app, { event_types: [type] });
      const { requests } = receiver();
      const before = await appState(app);
      const { res } = await postJson('test', { webhook_id: hook.id, type }, bearer(await tokenFor(app)));
      expect(res.headers.get('x-error-detail')).toBe(`type ${type} is reserved for the service's operational events`);
      await expectEventFail(res, 400);
      await deliverDue(hook.id);
      expect(await appState(app)).toEqual(before);
      expect(requests).toEqual([]);
    },
  );
});

describe('an invalid delivery setting', () => {
  it.each([
    ['DELIVERY_RETRY_SCHEDULE', '2s 13h'],
    ['DELIVERY_RETENTION_DAYS', '0'],
  ])('%s=%s: test events and recover both answer 500 naming it, storing and sending nothing', async (name, bad) => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    const hook = await registerWebhook(app);
    const headers = bearer(await tokenFor(app));
    const { requests } = receiver();
    const since = new Date(Date.now() - 3_600_000).toISOString();
    for (const [path, body] of [
      ['test', { webhook_id: hook.id }],
      ['recover', { webhook_id: hook.id, since }],
    ] as const) {
      error.mockClear();
      const { res } = await postJson(path, body, headers, { [name]: bad });
      await expectEventFail(res, 500);
      expect(error.mock.calls.map((c) => String(c[0])).join('\n'), path).toContain(`configuration error: ${name}: `);
    }
    await deliverDue(hook.id);
    expect(requests).toEqual([]);
    expect(await appState(app)).toEqual({ events: [], deliveries: [] });
  });
});
