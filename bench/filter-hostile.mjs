// The hostile content filters scenario of `npm run bench` (`--only filter`): one application's
// ten webhooks each have a filter of 8 KiB made of as many `$lt` tests of one path as fit (353),
// and every event it is published holds a string of 65,000 digits at that path, above every bound,
// so that every test of every filter runs and none holds. Reported: the time of each publish
// (POST /v1.0/platform/nft/event, 202 once stored), one at a time; target: the median under
// 100 ms (a value at a path is read once per event, and digit strings compare by their digits).
//   --filter-hostile-publishes N (20)  --filter-hostile-digits N (65,000)
import { callJson, median, option, SERVICE_OBJECTS, startWorker, tokenFor } from './harness.mjs';
import { EVENT_PATH, PATH } from './scenarios.mjs';

export const FILTER_HOSTILE = 'filter: hostile filters (10 webhooks, 353 $lt tests each, a 65,000-digit value)';
export const FILTER_HOSTILE_TARGET = { p50Ms: 100 };

const APP = 'filter-hostile';
const WEBHOOKS = 10;
const PUBLISHES = option('--filter-hostile-publishes', 20);
const DIGITS = option('--filter-hostile-digits', 65_000);
const FILTER_MAX_BYTES = 8192;

/**
 * As many `$lt` tests of `data.v` as fit in 8 KiB, in `$or`s of 64 filters (the most one holds):
 * against a value above every bound, every one of them runs. Bounds "1" to "9", by turns.
 */
function hostileFilter() {
  const test = (i) => ({ 'data.v': { $lt: String(1 + (i % 9)) } });
  const shaped = (tests) => {
    const groups = [];
    for (let i = 0; i < tests.length; i += 64) groups.push({ $or: tests.slice(i, i + 64) });
    return { $or: groups };
  };
  const tests = [];
  while (JSON.stringify(shaped([...tests, test(tests.length)])).length <= FILTER_MAX_BYTES)
    tests.push(test(tests.length));
  return { filter: shaped(tests), tests: tests.length };
}

/** Runs the scenario once against the production bundle at `bundleUrl`; returns its figures. */
export async function runFilterHostile({ bundleUrl, log }) {
  const worker = await startWorker({
    scriptPath: bundleUrl.href,
    durableObjects: SERVICE_OBJECTS,
    apps: 0,
    perApp: 0,
    // wrangler.toml's limits, as an application meets them in production.
    configuredLimits: true,
  });
  try {
    const { filter, tests } = hostileFilter();
    const token = await tokenFor(APP);
    const platform = await tokenFor('platform-service', { scope: 'events:publish' });
    // Never sent to: no event matches. Registered through the API, as a client does.
    for (let k = 0; k < WEBHOOKS; k++) {
      const r = await callJson('POST', worker.url + PATH, token, {
        url: `https://hooks.example.com/filter-hostile/${k}`,
        filter,
      });
      if (r.status !== 201) throw new Error(`POST ${PATH}: ${r.status} ${r.text.slice(0, 300)}`);
    }
    // Each event's value a new one: its first digits its number, then nines to DIGITS digits.
    const publish = async (n) => {
      const v = `${n + 1}`.padEnd(DIGITS, '9');
      const t = performance.now();
      const r = await callJson('POST', worker.url + EVENT_PATH, platform, {
        app_id: APP,
        type: 'NEW_NFT',
        id: `fh-${n}`,
        data: { v },
      });
      const ms = performance.now() - t;
      if (r.status !== 202) throw new Error(`publish: ${r.status} ${r.text.slice(0, 300)}`);
      return ms;
    };
    // Warm-up: the isolate compiled, the application's object made, the filters compiled.
    await publish(PUBLISHES);
    const ms = [];
    for (let n = 0; n < PUBLISHES; n++) ms.push(await publish(n));
    const figures = {
      webhooks: WEBHOOKS,
      tests_per_filter: tests,
      filter_bytes: JSON.stringify(filter).length,
      digits: DIGITS,
      publishes: PUBLISHES,
      p50_ms: Math.round(median(ms)),
      max_ms: Math.round(Math.max(...ms)),
    };
    log(
      `${FILTER_HOSTILE}: ${PUBLISHES} publishes (${figures.filter_bytes}-byte filters), ` +
        `p50 ${figures.p50_ms} ms, max ${figures.max_ms} ms`,
    );
    return figures;
  } finally {
    await worker.dispose();
  }
}
