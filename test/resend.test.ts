import { env } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { appState } from './helpers/app-state';
import { countingDb, webhooksOf } from './helpers/database';
import { applicationOf, applicationSql, deliverDue, endpointSql, storedDelivery } from './helpers/objects';
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
  const res = await fetchAndWait(
    overrides,
    new Request(RESEND_URL, {
      method: 'POST',
      headers: { ...bearer(await tokenFor(app)), 'content-type': contentType, 'x-request-id': 'req-resend' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
  return { res };
}

/** The reply's delivery_id, exact (a JSON integer above 2^53). */
const newDeliveryId = (text: string) => /"delivery_id":(\d+)/.exec(text)?.[1] as string;

/** Everything stored for these applications: events, deliveries and attempts, in their objects. */
const tables = async (...apps: string[]) => {
  const state = [];
  for (const app of apps) {
    const attempts = [];
    for (const hook of await webhooksOf(app)) {
      attempts.push(
        ...(await endpointSql(
          hook.webhook_id,
          'SELECT CAST(delivery_id AS TEXT) AS id, attempt, status FROM delivery_attempts ORDER BY delivery_id, attempt',
        )),
      );
    }
    state.push({ ...(await appState(app)), attempts });
  }
  return state;
};

/** A delivery of the webhook with its event's source key (from the application's object). */
const deliveryRow = async (app: string, webhookId: string, id: string) => {
  const d = await storedDelivery(webhookId, id);
  if (d === undefined) return undefined;
  const [event] = await applicationSql<{ source_key: string | null }>(
    app,
    `SELECT CASE WHEN source_key LIKE 'evt:%' THEN NULL ELSE source_key END AS source_key FROM dedupe
     WHERE event_id = ?1`,
    d.event_id,
  );
  const { status, attempts, event_id, message_id, payload, type, schedule_start, next_attempt_at } = d;
  return {
    status,
    attempts,
    event_id,
    message_id,
    payload,
    type,
    schedule_start,
    next_attempt_at,
    source_key: event?.source_key,
  };
};

describe('POST /v1.0/app/nft/webhook/delivery/resend', () => {
  it('makes a new delivery of the same event: same body bytes, same webhook-id, valid signature', async () => {
    const app = freshApp();
    const { id, secret } = await registerWebhook(app);
    const first = receiver(() => new Response('nope', { status: 500 }));
    const { eventId, deliveryIds } = await publishEvent(app, 'NEW_NFT', { token_id: '7', owner: '0xabc' });
    const original = deliveryIds[0] as string;
    await deliverDue(id);
    expect(first.requests).toHaveLength(1);
    const firstBody = first.requests[0]!.body;
    vi.restoreAllMocks();
    const originalBefore = await deliveryRow(app, id, original);
    expect(originalBefore).toMatchObject({ status: 'pending', attempts: 1 });

    // The new delivery's endpoint may send it at once: its receiver holds the reply until told.
    let answer = () => {};
    const held = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const second = receiver(async () => {
      await held;
      return new Response('ok');
    });
    // The id as a JSON integer, exact.
    const { res } = await resend(app, `{"delivery_id": ${original}}`);
    const { value, text } = await expectValue<{ delivery_id: number }>(res, 202);
    expect(Object.keys(value)).toEqual(['delivery_id']);
    const newId = newDeliveryId(text);
    expect(newId).toMatch(/^\d+$/);
    expect(newId).not.toBe(original);
    // The old delivery is as it was; the new one is pending, on a fresh schedule, of a new event
    // (no source key) that carries the original as its message id.
    expect(await deliveryRow(app, id, original)).toEqual(originalBefore);
    const row = await deliveryRow(app, id, newId);
    expect(row).toMatchObject({
      status: 'pending',
      attempts: 0,
      schedule_start: 0,
      message_id: eventId,
      payload: originalBefore?.payload,
      type: 'NEW_NFT',
      source_key: null,
    });
    expect(row?.event_id).not.toBe(eventId);

    answer();
    await deliverDue(id);
    expect(second.requests).toHaveLength(1);
    const request = second.requests[0]!;
    expect(request.headers['webhook-id']).toBe(eventId);
    expect(request.body).toBe(firstBody);
    expect(new StandardWebhook(secret).verify(request.body, request.headers)).toMatchObject({
      type: 'NEW_NFT',
      data: { token_id: '7', owner: '0xabc' },
    });
    expect((await deliveryRow(app, id, newId))?.status).toBe('succeeded');

    // The delivery log shows it with the original event_id.
    const log = await fetchAndWait(
      {},
      new Request(`${ORIGIN}/v1.0/app/nft/webhook/delivery?delivery_id=${newId}`, {
        headers: bearer(await tokenFor(app)),
      }),
    );
    // A read by delivery_id asks only the objects, not D1: no X-D1-Bookmark (which expectValue wants).
    expect(log.status).toBe(200);
    expect(((await log.json()) as { value: unknown }).value).toMatchObject({
      event_id: eventId,
      status: 'succeeded',
    });

    // A resend of the resend is still the original message.
    const again = await resend(app, { delivery_id: newId });
    const third = newDeliveryId((await expectValue<{ delivery_id: number }>(again.res, 202)).text);
    expect((await deliveryRow(app, id, third))?.message_id).toBe(eventId);
  });

  it('ignores the old delivery state and the webhook event_types', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    receiver(() => new Response('nope', { status: 500 }));
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
    const { text } = await expectValue<{ delivery_id: number }>(res, 202);
    const row = await deliveryRow(app, id, newDeliveryId(text));
    expect(row).toMatchObject({ status: 'pending', type: 'NEW_NFT' });
  });

  it.each([
    ['DELIVERY_RETRY_SCHEDULE', '2s 13h'],
    ['DELIVERY_RETENTION_DAYS', '0'],
  ])(
    'fails closed on an invalid %s (%s), as publishing, test events and recovery do: 500 naming it, nothing stored or sent',
    async (name, bad) => {
      const app = freshApp();
      const { id } = await registerWebhook(app);
      const { deliveryIds } = await publishEvent(app);
      await deliverDue(id);
      const before = await tables(app);
      const { requests } = receiver();
      const error = vi.spyOn(console, 'error').mockImplementation(() => {});
      const { res } = await resend(app, { delivery_id: deliveryIds[0] }, { [name]: bad });
      await expectEnvelope(res, 500, 64064, 'event fail');
      expect(error.mock.calls.map((c) => String(c[0])).join('\n')).toContain(`configuration error: ${name}: `);
      await deliverDue(id);
      expect(requests).toEqual([]);
      expect(await tables(app)).toEqual(before);
    },
  );

  it('answers 409 for a disabled webhook and stores nothing', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    const { deliveryIds } = await publishEvent(app);
    await put({ webhook_id: id, is_enabled: false }, bearer(await tokenFor(app)));
    await deliverDue(id);
    const before = await tables(app);
    const { res } = await resend(app, { delivery_id: deliveryIds[0] });
    expect(res.headers.get('x-error-detail')).toBe('the webhook is disabled');
    expect(res.headers.get('x-d1-bookmark')).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
    await expectEnvelope(res, 409, 64064, 'event fail');
    expect(await tables(app)).toEqual(before);
  });

  it('answers 404 for a missing or foreign delivery, or one whose webhook was deleted, and stores nothing', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    receiver();
    const { deliveryIds } = await publishEvent(app);
    const delivery = deliveryIds[0] as string;
    await deliverDue(id);
    const stranger = freshApp();
    const before = await tables(app, stranger);
    const foreign = await resend(stranger, { delivery_id: delivery });
    const missing = await resend(app, { delivery_id: '987654321' });
    expect(foreign.res.headers.get('x-error-detail')).toBe('no such delivery for this application');
    await expectEnvelope(foreign.res, 404, 64064, 'event fail');
    await expectEnvelope(missing.res, 404, 64064, 'event fail');
    expect(await tables(app, stranger)).toEqual(before);
    await fetchAndWait(
      {},
      new Request(`${ORIGIN}/v1.0/app/nft/webhook?webhook_id=${id}`, {
        method: 'DELETE',
        headers: bearer(await tokenFor(app)),
      }),
    );
    // D1 no longer lists the webhook: its endpoint's storage is read by id.
    const stored = async () => ({
      app: await appState(app),
      endpoint: await endpointSql(id, 'SELECT CAST(delivery_id AS TEXT) AS id, status FROM deliveries'),
    });
    const afterDelete = await stored();
    const gone = await resend(app, { delivery_id: delivery });
    await expectEnvelope(gone.res, 404, 64064, 'event fail');
    expect(await stored()).toEqual(afterDelete);
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

  it('is one D1 round trip; its event handed to the application twice (same event id) is one delivery', async () => {
    const app = freshApp();
    const { id } = await registerWebhook(app);
    receiver();
    const { deliveryIds } = await publishEvent(app);
    const counted = countingDb(env.DB);
    await expectValue((await resend(app, { delivery_id: deliveryIds[0] }, { DB: counted.db })).res, 202);
    expect(counted.calls()).toBe(1);
    const original = await storedDelivery(id, deliveryIds[0] as string);
    const event = {
      eventId: `evt_${crypto.randomUUID().replaceAll('-', '')}`,
      appId: app,
      sourceKey: null,
      type: original!.type,
      payload: original!.payload,
      createdAt: new Date().toISOString(),
      messageId: original!.message_id,
    };
    const first = await applicationOf(app).publish([event], [[id]]);
    const retried = await applicationOf(app).publish([event], [[id]]);
    // Stored under an id that carries its sequence number; handed again, the same event.
    expect(first).toEqual([
      { eventId: expect.stringMatching(/^evt_[0-9a-f]{32}$/), deliveryIds: [expect.stringMatching(/^\d+$/)] },
    ]);
    expect(retried).toEqual([{ eventId: first[0]?.eventId, deliveryIds: [] }]);
    const rows = await endpointSql<{ n: number }>(
      id,
      'SELECT COUNT(*) AS n FROM deliveries WHERE event_id = ?1',
      first[0]?.eventId as string,
    );
    expect(rows[0]?.n).toBe(1);
  });
});
