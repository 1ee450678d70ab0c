// A slow endpoint holds only its own object: under `wrangler dev` (DELIVERY_TIMEOUT_SECONDS=3), one
// receiver takes 2 s (the timeout less 1 s) to answer each of 40 deliveries, and the time from
// publish to arrival at two healthy endpoints (one of the same application, one of another) is
// measured alone and while the slow one is busy: the medians are within 1 s of each other.
import { describe, expect, it } from 'vitest';
import { type Api, apiOf, ownFolder } from './api';
import { startReceiver, until } from './receiver';
import { freePort, ownWorker } from './wrangler-dev';

const TIMEOUT_SECONDS = 3;
const SLOW_MS = (TIMEOUT_SECONDS - 1) * 1000;
const SLOW_DELIVERIES = 40;
/** Publish-to-arrival samples per healthy endpoint, quiet and busy. */
const SAMPLES = 8;

const own = ownFolder('nft-webhook-isolation-');

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

describe('isolation of a slow endpoint (wrangler dev, DELIVERY_TIMEOUT_SECONDS=3)', () => {
  it(`keeps the publish-to-arrival median of healthy endpoints within 1 s while another takes ${SLOW_MS} ms per delivery`, async () => {
    const port = await freePort();
    own.receiver = await startReceiver(port);
    const rx = own.receiver;
    rx.answer('/slow', () => ({ status: 200, delayMs: SLOW_MS }));
    const worker = ownWorker(own.folder, [`http://127.0.0.1:${port}`], {
      DELIVERY_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
      DELIVERY_RETRY_SCHEDULE: '1s 1s 1s',
    });
    own.dev = await worker.start();
    const api: Api = apiOf(own.dev.baseUrl, worker.secret);
    const [appA, appB] = ['isolation-a', 'isolation-b'];
    // The slow endpoint takes MOD_NFT only; the healthy one of the same application NEW_NFT only.
    await api.register(appA, rx.url('/slow'), ['MOD_NFT']);
    await api.register(appA, rx.url('/same-app'), ['NEW_NFT']);
    await api.register(appB, rx.url('/other-app'));

    /** Publishes one NEW_NFT event to `app`; ms until it arrived at `path`. */
    let n = 0;
    const sample = async (app: string, path: string) => {
      n += 1;
      const started = Date.now();
      const eventId = await api.publish(app, 'NEW_NFT', `{"token_id":"${n}"}`);
      const request = await until(`${eventId} at ${path}`, () =>
        rx.requests(path).find((r) => r.headers['webhook-id'] === eventId),
      );
      return request.at - started;
    };
    const measure = async () => {
      const same: number[] = [];
      const other: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        same.push(await sample(appA, '/same-app'));
        other.push(await sample(appB, '/other-app'));
      }
      return { same, other };
    };

    // Warm: the first delivery of each endpoint (objects created, modules loaded) is not measured.
    await sample(appA, '/same-app');
    await sample(appB, '/other-app');
    const quiet = await measure();

    await Promise.all(
      Array.from({ length: SLOW_DELIVERIES }, (_, i) => api.publish(appA, 'MOD_NFT', `{"token_id":"slow-${i}"}`)),
    );
    await rx.waitFor('/slow', 1);
    const busy = await measure();
    // Still busy when the last sample arrived: not every slow delivery has been answered yet.
    const answered = rx.requests('/slow').filter((r) => Date.now() - r.at >= SLOW_MS).length;
    expect(answered).toBeLessThan(SLOW_DELIVERIES);

    const medians = {
      quiet: { same: median(quiet.same), other: median(quiet.other) },
      busy: { same: median(busy.same), other: median(busy.other) },
    };
    console.log(`publish-to-arrival (ms): ${JSON.stringify({ medians, quiet, busy, slowAnswered: answered })}`);
    expect(Math.abs(medians.busy.same - medians.quiet.same)).toBeLessThanOrEqual(1000);
    expect(Math.abs(medians.busy.other - medians.quiet.other)).toBeLessThanOrEqual(1000);
    // The slow endpoint does get all 40, each answered once (none timed out and retried).
    const all = await rx.waitFor('/slow', SLOW_DELIVERIES, 60_000);
    expect(new Set(all.map((r) => r.headers['webhook-id'])).size).toBe(SLOW_DELIVERIES);
  }, 180_000);
});
