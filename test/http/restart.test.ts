// Pending deliveries survive a restart by themselves: an endpoint's object keeps its alarm. Under
// `wrangler dev`, a delivery to a receiver that is down (its connection dropped) is pending with its
// next attempt a few seconds away; wrangler dev stops, the receiver starts, wrangler dev starts
// again on the same local state, and the delivery arrives without the Cron Trigger ever running.
import { createServer } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { apiOf, type LoggedDelivery, ownFolder } from './api';
import { signedHeaders, sleep, startReceiver, until } from './receiver';
import { freePort, ownWorker } from './wrangler-dev';

const own = ownFolder('nft-webhook-restart-');

describe('a restart of wrangler dev', () => {
  it('keeps a pending delivery: its endpoint object alarm sends it after the restart, with no Cron Trigger', async () => {
    const port = await freePort();
    // The receiver is down: its port held by a listener that drops every connection (nothing
    // else can take the port meanwhile, and the attempt fails without a status).
    const down = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => down.listen(port, '127.0.0.1', resolve));
    const worker = ownWorker(own.folder, [`http://127.0.0.1:${port}`], { DELIVERY_RETRY_SCHEDULE: '2s 2s 2s' });
    own.dev = await worker.start();
    let api = apiOf(own.dev.baseUrl, worker.secret);
    const app = 'restart-app';
    const { id: webhookId, secret } = await api.register(app, `http://127.0.0.1:${port}/hook`);
    const eventId = await api.publish(app, 'NEW_NFT', '{"token_id":"1"}');
    // The first attempt finds the receiver down, the next one is 2 s later.
    let last: LoggedDelivery[] = [];
    const [pending] = await until(
      () => `a refused first attempt (last seen: ${JSON.stringify(last)})`,
      async () => {
        last = await api.deliveries(app, webhookId);
        return last[0]?.attempts === 1 ? last : undefined;
      },
      20_000,
      50,
    );
    await own.dev.stop();
    own.dev = undefined;
    expect(pending).toMatchObject({ event_id: eventId, status: 'pending', attempts: 1, last_status: null });

    await new Promise<void>((resolve) => down.close(() => resolve()));
    own.receiver = await startReceiver(port);
    const restarted = Date.now();
    own.dev = await worker.start();
    api = apiOf(own.dev.baseUrl, worker.secret);
    // No request to the Worker at all until the delivery has arrived: only its alarm can send it.
    const [request] = await own.receiver.waitFor('/hook', 1, 60_000);
    console.log(`arrived ${Date.now() - restarted} ms after wrangler dev was started again`);
    expect(request?.headers['webhook-id']).toBe(eventId);
    new Webhook(secret).verify(request?.body as Buffer, signedHeaders(request as NonNullable<typeof request>));

    const delivery = await until('the delivery recorded as succeeded', async () => {
      const found = await api.delivery(app, pending?.delivery_id as string);
      return found?.status === 'succeeded' ? found : undefined;
    });
    expect(delivery.attempt_log?.map(({ attempt, status }) => ({ attempt, status }))).toEqual([
      ...Array.from({ length: delivery.attempts - 1 }, (_, i) => ({ attempt: i + 1, status: null })),
      { attempt: delivery.attempts, status: 204 },
    ]);
    await sleep(1500);
    expect(own.receiver.requests('/hook')).toHaveLength(1);
  }, 180_000);
});
