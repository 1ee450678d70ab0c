// The archive under `wrangler dev`: its local R2 bucket (HISTORY) comes from wrangler.toml's
// binding, nothing to set up. With HISTORY_HOT_SECONDS of 2, deliveries that ended are archived by
// their endpoint's alarm a few seconds later, and the log and the read by id answer over HTTP
// exactly as before.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { apiOf, DELIVERY_PATH, logUntil, ownFolder } from './api';
import { startReceiver, until } from './receiver';
import { freePort, ownWorker, wranglerAsync } from './wrangler-dev';

const own = ownFolder('nft-webhook-archive-');

describe('the archive under wrangler dev', () => {
  it('archives deliveries that ended to the local R2 bucket, and the log reads the same', async () => {
    const port = await freePort();
    own.receiver = await startReceiver(port);
    const worker = ownWorker(own.folder, [`http://127.0.0.1:${port}`], { HISTORY_HOT_SECONDS: '2' });
    own.dev = await worker.start();
    const api = apiOf(own.dev.baseUrl, worker.secret);
    const app = 'archive-app';
    const { id: webhookId } = await api.register(app, own.receiver.url('/hook'));
    for (const n of [1, 2, 3]) await api.publish(app, 'NEW_NFT', `{"token_id":"${n}"}`);
    const log = await logUntil(
      api,
      app,
      webhookId,
      'three delivered',
      (l) => l.length === 3 && l.every((d) => d.status === 'succeeded'),
      30_000,
    );
    const page = () => api.call('GET', `${DELIVERY_PATH}?webhook_id=${webhookId}&limit=2`, app);
    const one = () => api.call('GET', `${DELIVERY_PATH}?delivery_id=${log[1]?.delivery_id}`, app);
    const before = { page: await page(), one: await one() };

    // The alarm archives what has ended (one object or more, as the three become cold): its log
    // names each R2 object, under the application's and the webhook's prefix.
    const logFile = join(own.folder, 'wrangler-dev-1.log');
    const archived = () =>
      [
        ...readFileSync(logFile, 'utf8').matchAll(
          /"msg":"deliveries archived"[^}]*"key":"([^"]+)","deliveries":(\d+)/g,
        ),
      ].map((m) => ({ key: m[1] as string, deliveries: Number(m[2]) }));
    const objects = await until(
      () => `three deliveries archived (seen: ${JSON.stringify(archived())})`,
      () => {
        const seen = archived();
        return seen.reduce((n, o) => n + o.deliveries, 0) >= 3 ? seen : undefined;
      },
      60_000,
      500,
    );
    const ids: string[] = [];
    for (const [i, { key }] of objects.entries()) {
      expect(key.startsWith(`${app}/${webhookId}/`), key).toBe(true);
      const file = join(own.folder, `object-${i}.gz`);
      await wranglerAsync([
        'r2',
        'object',
        'get',
        `nft-webhook-history/${key}`,
        '--local',
        '--persist-to',
        worker.persistTo,
        '--file',
        file,
      ]);
      const lines = gunzipSync(readFileSync(file)).toString('utf8').split('\n');
      ids.push(...lines.map((l) => JSON.parse(l).delivery_id as string));
    }
    expect(ids).toEqual(log.map((d) => d.delivery_id).reverse());
    expect(await page()).toEqual(before.page);
    expect(await one()).toEqual(before.one);
  }, 180_000);
});
