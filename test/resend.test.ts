import { env } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resendDelivery } from '../src/deliveries/store/resend';
import { countingDb } from './helpers/database';
import { deliver, fakeQueue } from './helpers/queues';
import { receiver } from './helpers/receiver';
import { expectEnvelope, expectValue } from './helpers/replies';
import { fetchAndWait, ORIGIN, publishEvent, put, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const RESEND_URL = `${ORIGIN}/v1.0/app/nft/webhook/delivery/resend`;

async function resend(
  app: string,
  body: unknown,
  overrides: Record<string, unknown> = {},
  contentType = 'application/json',
) {
  const queue = fakeQueue();
  const res = await fetchAndWait(
    { DELIVERIES: queue.binding, ...overrides },
    new Request(RESEND_URL, {
      method: 'POST',
      headers: { ...bearer(await tokenFor(app)), 'content-type': contentType, 'x-request-id': 'req-resend' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
  return { res, sent: queue.sent as { delivery_id: string }[] };
}

const tables = async () => {
  const [events, deliveries, attempts] = await env.DB.batch([
    env.DB.prepare('SELECT * FROM events ORDER BY event_id'),
    env.DB.prepare('SELECT * FROM deliveries ORDER BY delivery_id'),
    env.DB.prepare('SELECT * FROM delivery_attempts ORDER BY delivery_id, attempt'),
  ]);
  return { events: events!.results, deliveries: deliveries!.results, attempts: attempts!.results };
};

const deliveryRow = (id: string) =>
  env.DB.prepare(
    `SELECT d.status, d.attempts, CAST(d.webhook_id AS TEXT) AS webhook_id, d.event_id, e.message_id, e.payload, e.type, e.source_key
     FROM deliveries AS d JOIN events AS e ON e.event_id = d.event_id WHERE d.delivery_id = CAST(?1 AS INTEGER)`,
  )
    .bind(id)
    .first<Record<string, unknown>>();

describe('POST /v1.0/app/nft/webhook/delivery/resend', () => {
  it('makes a new delivery of the same event: same body bytes, same webhook-id, valid signature', async () => {
    const app = freshApp();
    const { id, secret } = await registerWebhook(app);
    const { eventId, deliveryIds } = await publishEvent(app, 'NEW_NFT', { token_id: '7', owner: '0xabc' });
    const original = deliveryIds[0] as string;
    const first = receiver(() => new Response('nope', { status: 500 }));
    await deliver([original]);
    const firstBody = first.requests[0]!.body;
    vi.restoreAllMocks();
    const originalBefore = await deliveryRow(original);

    const { res, sent } = await resend(app, { delivery_id: Number(original) });
    const { value, text } = await expectValue<{ delivery_id: number }>(res, 202);
    expect(Object.keys(value)).toEqual(['delivery_id']);
    const newId = String(value.delivery_id);
    expect(newId).not.toBe(original);
    expect(text).toContain(`"delivery_id":${newId}`);
    expect(sent).toEqual([{ delivery_id: newId }]);
    // The old delivery is as it was; the new one is pending, on a fresh schedule, of a new event row
    // that carries the original as its message id.
    expect(await deliveryRow(original)).toEqual(originalBefore);
    const row = await deliveryRow(newId);
    expect(row).toMatchObject({
      status: 'pending',
      attempts: 0,
      webhook_id: id,
      message_id: eventId,
      payload: originalBefore?.payload,
      type: 'NEW_NFT',
      source_key: null,
    });
    expect(row?.event_id).not.toBe(eventId);

    const second = receiver(() => new Response('ok'));
    await deliver([newId]);
    const request = second.requests[0]!;
    expect(request.headers['webhook-id']).toBe(eventId);
    expect(request.body).toBe(firstBody);
    expect(new StandardWebhook(secret).verify(request.body, request.headers)).toMatchObject({
      type: 'NEW_NFT',
      data: { token_id: '7', owner: '0xabc' },
    });
    expect((await deliveryRow(newId))?.status).toBe('succeeded');

    // The delivery log shows it with the original event_id.
    const log = await fetchAndWait(
      {},
      new Request(`${ORIGIN}/v1.0/app/nft/webhook/delivery?delivery_id=${newId}`, {
        headers: bearer(await tokenFor(app)),
      }),
    );
    expect((await expectValue<{ event_id: string; status: string }>(log)).value).toMatchObject({
      event_id: eventId,
      status: 'succeeded',
    });

    // A resend of the resend is still the original message.
    const again = await resend(app, { delivery_id: newId });
    const third = String((await expectValue<{ delivery_id: number }>(again.res, 202)).value.delivery_id);
    expect((await deliveryRow(third))?.message_id).toBe(eventId);
  });

  it('ignores the old delivery state and the webhook event_types', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app, 'NEW_NFT');
    // Still pending, and the webhook no longer takes NEW_NFT.
    const patch = await fetchAndWait(
      {},
      new Request(`${ORIGIN}/v1.0/app/nft/webhook`, {
        method: 'PATCH',
        headers: { ...bearer(await tokenFor(app)), 'content-type': 'application/json' },
        body: JSON.stringify({ webhook_id: id, event_types: ['MOD_NFT'] }),
      }),
    );
    await expectValue(patch);
    const { res } = await resend(app, { delivery_id: deliveryIds[0] });
    const { value } = await expectValue<{ delivery_id: number }>(res, 202);
    expect((await deliveryRow(String(value.delivery_id)))?.status).toBe('pending');
  });

  it('answers 409 for a disabled webhook and stores nothing', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    await put({ webhook_id: id, is_enabled: false }, bearer(await tokenFor(app)));
    const before = await tables();
    const { res, sent } = await resend(app, { delivery_id: deliveryIds[0] });
    expect(res.headers.get('x-error-detail')).toBe('the webhook is disabled');
    expect(res.headers.get('x-d1-bookmark')).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
    await expectEnvelope(res, 409, 64064, 'event fail');
    expect(sent).toEqual([]);
    expect(await tables()).toEqual(before);
  });

  it('answers 404 for a missing or foreign delivery, or one whose webhook was deleted, and stores nothing', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    const delivery = deliveryIds[0] as string;
    const before = await tables();
    const foreign = await resend(freshApp(), { delivery_id: delivery });
    const missing = await resend(app, { delivery_id: '987654321' });
    expect(foreign.res.headers.get('x-error-detail')).toBe('no such delivery for this application');
    await expectEnvelope(foreign.res, 404, 64064, 'event fail');
    await expectEnvelope(missing.res, 404, 64064, 'event fail');
    expect(await tables()).toEqual(before);
    await fetchAndWait(
      {},
      new Request(`${ORIGIN}/v1.0/app/nft/webhook?webhook_id=${id}`, {
        method: 'DELETE',
        headers: bearer(await tokenFor(app)),
      }),
    );
    const afterDelete = await tables();
    const gone = await resend(app, { delivery_id: delivery });
    await expectEnvelope(gone.res, 404, 64064, 'event fail');
    expect(await tables()).toEqual(afterDelete);
  });

  it.each([
    ['no delivery_id', {}],
    ['delivery_id 0', { delivery_id: 0 }],
    ['a float delivery_id', { delivery_id: 1.5 }],
    ['a null delivery_id', { delivery_id: null }],
    ['a signed delivery_id', { delivery_id: '-1' }],
    ['an out-of-range delivery_id', { delivery_id: '9223372036854775808' }],
    ['a body that is not an object', '[1]'],
    ['a body that is not JSON', '{'],
  ])('answers 400 for %s, before storage', async (_name, body) => {
    const counted = countingDb(env.DB);
    const { res } = await resend(freshApp(), body, { DB: counted.db });
    expect(res.headers.get('x-error-detail')).toBeTruthy();
    await expectEnvelope(res, 400, 64064, 'event fail');
    expect(counted.calls()).toBe(0);
  });

  it('answers 415 and 413 as the other POSTs, before storage', async () => {
    const counted = countingDb(env.DB);
    await expectEnvelope(
      (await resend(freshApp(), { delivery_id: 1 }, { DB: counted.db }, 'text/plain')).res,
      415,
      64064,
      'event fail',
    );
    await expectEnvelope(
      (await resend(freshApp(), { delivery_id: 1, pad: 'x'.repeat(9000) }, { DB: counted.db })).res,
      413,
      64064,
      'event fail',
    );
    expect(counted.calls()).toBe(0);
  });

  it('is one D1 round trip, and safe to retry: a batch run twice makes one delivery', async () => {
    const app = freshApp();
    await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    const counted = countingDb(env.DB);
    await expectValue((await resend(app, { delivery_id: deliveryIds[0] }, { DB: counted.db })).res, 202);
    expect(counted.calls()).toBe(1);
    const eventId = `evt_${crypto.randomUUID().replaceAll('-', '')}`;
    const now = new Date().toISOString();
    const first = await resendDelivery(env.DB, deliveryIds[0] as string, app, eventId, now);
    const retried = await resendDelivery(env.DB, deliveryIds[0] as string, app, eventId, now);
    expect(first.outcome).toBe('queued');
    expect(retried).toEqual(first);
    const { results } = await env.DB.prepare('SELECT COUNT(*) AS n FROM deliveries WHERE event_id = ?1')
      .bind(eventId)
      .all<{ n: number }>();
    expect(results[0]?.n).toBe(1);
  });
});
