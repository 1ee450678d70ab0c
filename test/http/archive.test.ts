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

    // The object of the three, in the local bucket, under the application's and webhook's prefix.
    const [last, , first] = log.map((d) => d.delivery_id);
    const key = `${app}/${webhookId}/${first}-${last}.ndjson.gz`;
    const file = join(own.folder, 'object.gz');
    await until(
      `R2 object ${key}`,
      async () => {
        try {
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
          return true;
        } catch {
          return undefined;
        }
      },
      60_000,
      1000,
    );
    const lines = gunzipSync(readFileSync(file)).toString('utf8').split('\n');
    expect(lines.map((l) => JSON.parse(l).delivery_id)).toEqual([first, log[1]?.delivery_id, last]);
    expect(await page()).toEqual(before.page);
    expect(await one()).toEqual(before.one);
  }, 180_000);
});
