// Disabling or deleting a webhook stops a pass already under way, over real sockets: under
// `wrangler dev` (DELIVERY_TIMEOUT_SECONDS=3), a receiver that never answers holds six attempts of
// a pass of twelve; after the DELETE (or PUT) has answered, no further request reaches it.
import { describe, expect, it } from 'vitest';
import { type Api, apiOf, ownFolder } from './api';
import { PATH } from './client';
import { sleep, startReceiver } from './receiver';
import { freePort, ownWorker } from './wrangler-dev';

const TIMEOUT_SECONDS = 3;
const own = ownFolder('nft-webhook-sending-changes-');

describe('a pass under way stops when its webhook is disabled or deleted (wrangler dev)', () => {
  it('after the reply, only the attempts already in flight reached a never-answering receiver', async () => {
    const port = await freePort();
    own.receiver = await startReceiver(port);
    const rx = own.receiver;
    // Never answers within the test: each attempt ends at the timeout.
    for (const path of ['/deleted', '/disabled']) rx.answer(path, () => ({ status: 204, delayMs: 120_000 }));
    const worker = ownWorker(own.folder, [`http://127.0.0.1:${port}`], {
      DELIVERY_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
      DELIVERY_RETRY_SCHEDULE: '1s 1s 1s',
    });
    own.dev = await worker.start();
    const api: Api = apiOf(own.dev.baseUrl, worker.secret);
    for (const [path, stop] of [
      ['/deleted', (app: string, id: number) => api.call('DELETE', `${PATH}?webhook_id=${id}`, app)],
      [
        '/disabled',
        (app: string, id: number) => api.call('PUT', PATH, app, JSON.stringify({ webhook_id: id, is_enabled: false })),
      ],
    ] as const) {
      const app = `changes${path.replace('/', '-')}`;
      const { id } = await api.register(app, rx.url(path));
      // The first delivery holds a pass for the timeout; the twelve published meanwhile are the next pass's.
      await api.publish(app, 'NEW_NFT', '{"n":0}');
      await rx.waitFor(path, 1);
      for (let n = 1; n <= 12; n++) await api.publish(app, 'NEW_NFT', `{"n":${n}}`);
      await rx.waitFor(path, 7, 20_000);
      const reply = await stop(app, id);
      expect(reply, reply.text).toEqual({ status: 200, text: '{"return":0,"message":"success"}' });
      const atReply = rx.requests(path).length;
      expect(atReply).toBeLessThanOrEqual(7);
      // Past the in-flight attempts' timeout, and their retry's delay: nothing more arrived.
      await sleep((TIMEOUT_SECONDS + 2) * 1000);
      expect(rx.requests(path).length, path).toBe(atReply);
      if (path === '/disabled') {
        const states = (await api.deliveries(app, id)).map((d) => d.status);
        expect(states).toHaveLength(13);
        expect(states.filter((s) => s === 'succeeded' || s === 'failed')).toEqual([]);
      }
    }
  }, 180_000);
});
