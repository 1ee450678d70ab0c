// npm run bench: the production bundle against two reference workers, in workerd (miniflare),
// driven by autocannon over keep-alive connections. Prints and writes (bench/results/) per
// scenario req/s, p50, p99, errors and the ratios to the references (median of the runs), the
// bundle size and the module start-up time. Exits non-zero when a target is missed.
//   node bench/bench.mjs [--runs N] [--seconds N] [--connections N]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import autocannon from 'autocannon';
import { build } from 'esbuild';
import { buildBundle, option, ownerOf, PATH, startWorker, tokenFor } from './harness.mjs';

const RUNS = option('--runs', 3);
const SECONDS = option('--seconds', 5);
const WARMUP_SECONDS = 1;
const CONNECTIONS = option('--connections', 16);
const APPS = 100;
const PER_APP = 600; // 60,000 webhooks

// ---- the workers ------------------------------------------------------------------------------

const bundleUrl = buildBundle();
const bundle = readFileSync(bundleUrl);
const floorScript = (
  await build({
    entryPoints: [new URL('floor-worker.ts', import.meta.url).pathname],
    bundle: true,
    format: 'esm',
    write: false,
    minify: true,
  })
).outputFiles[0].text;
// Reads the body (workerd closes a keep-alive connection whose request body was left unread),
// then answers the fixed envelope.
const constantScript = `export default { async fetch(request) {
  await request.arrayBuffer();
  return new Response('{"return":0,"message":"success"}', { headers: { 'content-type': 'application/json' } });
} };`;

const tokens = await Promise.all(Array.from({ length: APPS }, (_, i) => tokenFor(`app-${i}`)));
const tokenOf = (id) => tokens[Number(ownerOf(id, APPS).slice(4))];
const forged = `${tokens[0].slice(0, -4)}AAAA`;
const json = (token) => ({ 'content-type': 'application/json', authorization: `Bearer ${token}` });

// ---- the scenarios: each request from a counter, so "existing" ids are never reused -----------

const scenarios = [
  {
    name: 'PUT changes state',
    reference: 'floor',
    expect: 200,
    request: (n) => {
      const id = 1 + (n % 24_000);
      return {
        method: 'PUT',
        path: PATH,
        headers: json(tokenOf(id)),
        body: JSON.stringify({ webhook_id: id, is_enabled: id % 2 === 0 }),
      };
    },
  },
  {
    name: 'PUT same state',
    reference: 'floor',
    expect: 200,
    request: (n) => {
      const id = 50_001 + (n % 10_000);
      return {
        method: 'PUT',
        path: PATH,
        headers: json(tokenOf(id)),
        body: JSON.stringify({ webhook_id: id, is_enabled: id % 2 === 1 }),
      };
    },
  },
  {
    name: 'DELETE existing',
    reference: 'floor',
    expect: 200,
    request: (n) => {
      const id = 24_001 + (n % 24_000);
      return { method: 'DELETE', path: `${PATH}?webhook_id=${id}`, headers: json(tokenOf(id)) };
    },
  },
  {
    name: 'DELETE missing',
    reference: 'floor',
    expect: 404,
    request: (n) => {
      const id = 100_001 + n;
      return { method: 'DELETE', path: `${PATH}?webhook_id=${id}`, headers: json(tokenOf(id)) };
    },
  },
  {
    name: 'rejected token (PUT)',
    reference: 'constant',
    expect: 401,
    request: (n) => ({
      method: 'PUT',
      path: PATH,
      headers: json(forged),
      body: JSON.stringify({ webhook_id: 1 + n, is_enabled: true }),
    }),
  },
  {
    name: 'rejected token (DELETE)',
    reference: 'constant',
    expect: 401,
    request: (n) => ({ method: 'DELETE', path: `${PATH}?webhook_id=${1 + n}`, headers: json(forged) }),
  },
  {
    name: 'invalid input (PUT)',
    reference: 'constant',
    expect: 400,
    request: (n) => ({
      method: 'PUT',
      path: PATH,
      headers: json(tokenOf(1 + (n % 100))),
      body: JSON.stringify({ webhook_id: `${n}.5`, is_enabled: true }),
    }),
  },
];

/**
 * Drives `url` with the scenario's requests for `seconds`, counting from `counter.n` (shared with
 * the warm-up, so ids meant to exist are never reused).
 */
async function load(url, scenario, seconds, counter) {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => {
          const r = scenario.request(counter.n++);
          return { ...req, method: r.method, path: r.path, headers: r.headers, body: r.body };
        },
      },
    ],
  });
  return {
    // Completed requests over the run: autocannon's per-second average is too coarse for ratios.
    rps: result.requests.total / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    errors: result.errors + result.timeouts,
    statuses: { '2xx': result['2xx'], '4xx': result['4xx'], '5xx': result['5xx'] },
  };
}

/** Checks that the worker answers the scenario as expected before measuring it. */
async function probe(url, scenario, n) {
  const r = scenario.request(n);
  const res = await fetch(url + r.path, { method: r.method, headers: r.headers, body: r.body });
  await res.text();
  if (res.status !== scenario.expect)
    throw new Error(`${scenario.name}: expected ${scenario.expect}, got ${res.status}`);
}

// ---- runs ---------------------------------------------------------------------------------------

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const perRun = [];
for (let run = 1; run <= RUNS; run++) {
  const workers = {
    constant: await startWorker({ script: constantScript, apps: 1, perApp: 1 }),
    floor: await startWorker({ script: floorScript, apps: APPS, perApp: PER_APP }),
    // --no-limiters: diagnostic only, to see what the rate-limit bindings cost.
    service: await startWorker({
      scriptPath: bundleUrl.href,
      apps: APPS,
      perApp: PER_APP,
      limiters: !process.argv.includes('--no-limiters'),
    }),
  };
  const results = {};
  for (const scenario of scenarios) {
    const names = scenario.reference === 'floor' ? ['floor', 'service'] : ['service'];
    results[scenario.name] = {};
    // The constant worker answers every request shape the same way: measure it with this one.
    for (const name of ['constant', ...names]) {
      const { url } = workers[name];
      if (name !== 'constant') await probe(url, scenario, 999_999);
      const counter = { n: 0 };
      await load(url, scenario, WARMUP_SECONDS, counter);
      results[scenario.name][name] = await load(url, scenario, SECONDS, counter);
    }
    const r = results[scenario.name];
    process.stdout.write(
      `run ${run} ${scenario.name.padEnd(24)} service ${Math.round(r.service.rps)} req/s` +
        (r.floor ? `, floor ${Math.round(r.floor.rps)}` : '') +
        `, constant ${Math.round(r.constant.rps)}\n`,
    );
  }
  for (const w of Object.values(workers)) await w.dispose();
  perRun.push(results);
}

// ---- module start-up: fresh imports of the production bundle in V8 (Node) -----------------------

const startup = [];
for (let i = 0; i < 30; i++) {
  const t = performance.now();
  await import(`${bundleUrl.href}?fresh=${i}`);
  startup.push(performance.now() - t);
}

// ---- report --------------------------------------------------------------------------------------

const report = {
  date: new Date().toISOString(),
  runs: RUNS,
  seconds: SECONDS,
  connections: CONNECTIONS,
  webhooks: APPS * PER_APP,
  apps: APPS,
  scenarios: {},
};
const failures = [];
console.log(
  `\nmedian of ${RUNS} runs of ${SECONDS} s each, ${CONNECTIONS} keep-alive connections, ${APPS * PER_APP} webhooks / ${APPS} apps`,
);
console.log('scenario                  req/s   p50  p99  max  errors  ref p99  vs floor  vs constant  target');
for (const scenario of scenarios) {
  const runs = perRun.map((r) => r[scenario.name]);
  const pick = (name, key) => median(runs.map((r) => r[name][key]));
  const service = {
    rps: pick('service', 'rps'),
    p50: pick('service', 'p50'),
    p99: pick('service', 'p99'),
    max: Math.max(...runs.map((r) => r.service.max)),
    errors: Math.max(...runs.map((r) => r.service.errors)),
  };
  const referenceP99 = pick(scenario.reference, 'p99');
  const vsFloor = scenario.reference === 'floor' ? median(runs.map((r) => r.service.rps / r.floor.rps)) : null;
  const vsConstant = median(runs.map((r) => r.service.rps / r.constant.rps));
  const target =
    scenario.reference === 'floor'
      ? { ratio: vsFloor, min: 0.95, of: 'floor' }
      : { ratio: vsConstant, min: 0.8, of: 'constant' };
  const met = target.ratio >= target.min;
  // Outliers: a stall (a request over a second), or a tail far beyond the reference's, measured
  // beside it on the same machine (two shared cores give every worker some tail).
  const outliers = service.max > 1000 || service.p99 > 2 * referenceP99 + 10;
  if (!met) failures.push(`${scenario.name}: ${target.ratio.toFixed(2)}x ${target.of}, target ${target.min}x`);
  if (service.errors > 0) failures.push(`${scenario.name}: ${service.errors} connection errors`);
  if (outliers)
    failures.push(`${scenario.name}: p99 ${service.p99} ms (reference ${referenceP99} ms), max ${service.max} ms`);
  report.scenarios[scenario.name] = {
    service,
    floor:
      scenario.reference === 'floor'
        ? { rps: pick('floor', 'rps'), p50: pick('floor', 'p50'), p99: pick('floor', 'p99') }
        : undefined,
    constant: { rps: pick('constant', 'rps'), p50: pick('constant', 'p50'), p99: pick('constant', 'p99') },
    ratio_to_floor: vsFloor,
    ratio_to_constant: vsConstant,
    target: `>= ${target.min}x ${target.of}`,
    met,
    per_run: runs,
  };
  console.log(
    `${scenario.name.padEnd(24)} ${String(Math.round(service.rps)).padStart(6)} ${String(service.p50).padStart(5)} ${String(service.p99).padStart(4)} ${String(service.max).padStart(4)} ${String(service.errors).padStart(7)} ${String(referenceP99).padStart(8)}  ` +
      `${vsFloor === null ? '     -' : vsFloor.toFixed(2).padStart(6)}x ${vsConstant.toFixed(2).padStart(10)}x  ${met ? 'met' : 'MISSED'} (>= ${target.min}x ${target.of})`,
  );
}
const gzip = gzipSync(bundle).length;
report.bundle = { raw_bytes: bundle.length, gzip_bytes: gzip, limit_gzip_bytes: 32 * 1024 };
report.startup_ms = {
  first_import: startup[0],
  median_fresh_import: median(startup),
  method: 'import() of dist/index.js in Node 20 (V8), 30 fresh module instances',
};
if (gzip > 32 * 1024) failures.push(`bundle ${gzip} bytes gzip > 32 KiB`);
console.log(
  `\nbundle: ${(bundle.length / 1024).toFixed(1)} KiB raw, ${(gzip / 1024).toFixed(1)} KiB gzip (limit 32 KiB)`,
);
console.log(
  `module start-up: first import ${startup[0].toFixed(2)} ms, median fresh import ${median(startup).toFixed(2)} ms (V8 in Node)`,
);
report.failures = failures;

mkdirSync(new URL('results/', import.meta.url), { recursive: true });
const out = new URL(`results/bench-${report.date.replace(/[:.]/g, '-')}.json`, import.meta.url);
writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
writeFileSync(new URL('results/latest.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
console.log(`written: ${out.pathname}`);
if (failures.length > 0) {
  console.error(`\nTARGETS MISSED:\n${failures.join('\n')}`);
  process.exit(1);
}
console.log('\nall targets met');
