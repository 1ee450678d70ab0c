// Every id a reply carries, read as users read JSON (plain JSON.parse), addresses the same resource
// when sent back, over real HTTP against `wrangler dev`: the webhook, the test event's and the
// published event's deliveries in the log, one delivery, its resend, the event's journey, and the
// ids a live-deliveries WebSocket announces.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { BEARER_PROTOCOL, LIVE_PROTOCOL } from '../../src/core/live';
import { apiOf } from './api';
import { PATH, tokenFor } from './client';
import { type Receiver, startReceiver, until } from './receiver';

const baseUrl = inject('baseUrl');
const api = apiOf(baseUrl, inject('secret'));

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver(inject('receiverPort'));
});
afterAll(() => receiver?.close());

/** A reply read as every JSON client reads it. */
function read<T>(res: { status: number; text: string }, status: number): T {
  expect(res.status, res.text).toBe(status);
  const body = JSON.parse(res.text) as { return: number; value: T };
  expect(body.return).toBe(0);
  return body.value;
}

interface Delivery {
  delivery_id: number;
  event_id: string;
  status: string;
}

describe('ids read with plain JSON.parse, over real HTTP', () => {
  it('address the same webhook, deliveries and event when sent back, and so do the live socket’s', async () => {
    const app = `http-exact-${randomBytes(3).toString('hex')}`;
    const created = read<{ webhook_id: number }>(
      await api.call('POST', PATH, app, JSON.stringify({ url: receiver.url('/exact-ids') })),
      201,
    );
    expect(Number.isSafeInteger(created.webhook_id)).toBe(true);
    read(await api.call('GET', `${PATH}?webhook_id=${created.webhook_id}`, app), 200);

    // The live socket first: it announces the deliveries made from now on.
    const messages: string[] = [];
    const socket = new WebSocket(
      `${baseUrl.replace(/^http/, 'ws')}${PATH}/delivery/live?webhook_id=${created.webhook_id}`,
      [LIVE_PROTOCOL, `${BEARER_PROTOCOL}${await tokenFor(app)}`],
    );
    socket.on('message', (data) => messages.push(String(data)));
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });

    const published = await api.publish(app, 'NEW_NFT', '{"token_id":"1"}');
    const test = read<{ event_id: string; delivery_id: number }>(
      await api.call('POST', `${PATH}/test`, app, JSON.stringify({ webhook_id: created.webhook_id })),
      202,
    );
    const log = await until(
      () => 'both deliveries succeeded',
      async () => {
        const page = read<{ deliveries: Delivery[] }>(
          await api.call('GET', `${PATH}/delivery?webhook_id=${created.webhook_id}`, app),
          200,
        );
        return page.deliveries.length === 2 && page.deliveries.every((d) => d.status === 'succeeded')
          ? page.deliveries
          : undefined;
      },
      20_000,
      200,
    );
    expect(log.map((d) => d.event_id)).toEqual([test.event_id, published]);
    expect(log[0]?.delivery_id).toBe(test.delivery_id);

    for (const d of log) {
      expect(Number.isSafeInteger(d.delivery_id)).toBe(true);
      const one = read<Delivery>(await api.call('GET', `${PATH}/delivery?delivery_id=${d.delivery_id}`, app), 200);
      expect(one).toMatchObject({ delivery_id: d.delivery_id, event_id: d.event_id });
      const journey = read<{ event_id: string; deliveries: { webhook_id: number; delivery_id: number }[] }>(
        await api.call('GET', `/v1.0/app/nft/event?event_id=${d.event_id}`, app),
        200,
      );
      expect(journey.deliveries).toEqual([
        expect.objectContaining({ webhook_id: created.webhook_id, delivery_id: d.delivery_id }),
      ]);
    }

    const resent = read<{ delivery_id: number }>(
      await api.call('POST', `${PATH}/delivery/resend`, app, JSON.stringify({ delivery_id: log[1]?.delivery_id })),
      202,
    );
    const copy = read<Delivery>(await api.call('GET', `${PATH}/delivery?delivery_id=${resent.delivery_id}`, app), 200);
    expect(copy.event_id).toBe(published);

    // Every id the socket announced is one of these, and reads back.
    const announced = await until(
      () => `the socket's messages name the three deliveries (got ${messages.join(' | ')})`,
      async () => {
        const ids = new Set(messages.flatMap((m) => (JSON.parse(m) as { delivery_ids?: number[] }).delivery_ids ?? []));
        return ids.size >= 3 ? ids : undefined;
      },
      20_000,
      200,
    );
    socket.close();
    expect([...announced].sort()).toEqual([log[0]?.delivery_id, log[1]?.delivery_id, resent.delivery_id].sort());
    for (const id of announced) read(await api.call('GET', `${PATH}/delivery?delivery_id=${id}`, app), 200);
  });
});
