// npm run profile -- [rejected|put|get|list|publish|batch|filter|deliver] [--floor] [--unfiltered] [--inclusive <names>]: a CPU profile of the
// Worker's isolate in workerd (or, with --floor, of the floor worker's), taken over the inspector
// while autocannon drives one scenario (deliver: while the queue consumer delivers batches of
// 2,000 deliveries published to one application of ten endpoints and sent by the endpoints'
// objects to a local receiver, as the benchmark's delivery throughput does; the objects run in the
// same isolate as the Worker, so their time is in the profile), printed as
// self time per function and as busy CPU time per request (per delivery). filter: publishing to
// the content filters' application of 100 webhooks, every filter matching (the benchmark's
// scenario; --unfiltered: the same webhooks without filters). Built unminified so that the names
// mean something.
import autocannon from 'autocannon';
import { build } from 'esbuild';
import WebSocket from 'ws';
import { startDeliveryWorker, startReceiver, throughput } from './deliveries.mjs';
import {
  addFilterApp,
  addPublishApps,
  FLOOR_OBJECTS,
  ownerOf,
  PATH,
  SERVICE_OBJECTS,
  startWorker,
  tokenFor,
} from './harness.mjs';
import { scenarioList } from './scenarios.mjs';

const scenario = process.argv[2] ?? 'rejected';
const APPS = 10;
const floor = process.argv.includes('--floor');
const { outputFiles } = await build({
  entryPoints: [new URL(floor ? 'floor-worker.ts' : '../src/index.ts', import.meta.url).pathname],
  bundle: true,
  format: 'esm',
  write: false,
  conditions: ['workerd', 'worker', 'browser'],
  external: ['cloudflare:*'],
});
const inspectorPort = 9239;
const receiver = await startReceiver();
const objects = floor ? FLOOR_OBJECTS : SERVICE_OBJECTS;
const worker =
  scenario === 'deliver'
    ? await startDeliveryWorker({ script: outputFiles[0].text, receiver, inspectorPort, durableObjects: objects })
    : await startWorker({
        script: outputFiles[0].text,
        apps: APPS,
        perApp: 5000,
        inspectorPort,
        bindings: { FLOOR_SESSIONS: '1', WEBHOOK_URL_ALLOWED_ORIGINS: receiver.origin },
        // --no-limiters: diagnostic, to see what the rate-limit bindings cost.
        limiters: !process.argv.includes('--no-limiters'),
        durableObjects: objects,
      });
if (scenario === 'publish' || scenario === 'batch') await addPublishApps(worker.db, receiver.origin);
if (scenario === 'filter') await addFilterApp(worker.url, receiver.origin, !process.argv.includes('--unfiltered'));

// The Chrome DevTools Protocol, over the inspector's WebSocket for the user worker.
const targets = await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json();
const target =
  targets.find((t) => t.title.includes('core:user:main')) ?? targets.find((t) => t.title.includes('core:user'));
const ws = new WebSocket(target.webSocketDebuggerUrl);
await new Promise((resolve) => ws.once('open', resolve));
let nextId = 0;
const pending = new Map();
ws.on('message', (data) => {
  const msg = JSON.parse(data);
  pending.get(msg.id)?.(msg.result);
});
const send = (method, params = {}) =>
  new Promise((resolve) => {
    pending.set(++nextId, resolve);
    ws.send(JSON.stringify({ id: nextId, method, params }));
  });

const tokens = await Promise.all(Array.from({ length: APPS }, (_, i) => tokenFor(`app-${i}`)));
const platform = await tokenFor('platform-service', { scope: 'events:publish' });
const list = scenarioList({ tokens, newApps: [], platform });
const publish = list.find((s) => s.name === 'publish event');
const batch = list.find((s) => s.name === 'publish batch (100)');
const filtered = list.find((s) => s.name.startsWith('filter:') && s.name.includes('all match'));
let n = 0;
const owned = (id) => ({
  'content-type': 'application/json',
  authorization: `Bearer ${tokens[Number(ownerOf(id, APPS).slice(4))]}`,
});
const request =
  scenario === 'publish'
    ? () => publish.request(n++)
    : scenario === 'batch'
      ? () => batch.request(n++)
      : scenario === 'filter'
        ? () => filtered.request(n++)
        : scenario === 'list'
          ? () => {
              const id = 1 + (n++ % APPS);
              // The floor knows the application from this header, the service from the token.
              return { method: 'GET', path: PATH, headers: { ...owned(id), 'x-bench-app': ownerOf(id, APPS) } };
            }
          : scenario === 'get'
            ? () => {
                const id = 1 + (n++ % 50_000);
                return { method: 'GET', path: `${PATH}?webhook_id=${id}`, headers: owned(id) };
              }
            : scenario === 'rejected'
              ? () => ({
                  method: 'DELETE',
                  path: `${PATH}?webhook_id=1`,
                  headers: { authorization: `Bearer ${tokens[0].slice(0, -4)}AAAA` },
                })
              : () => {
                  const id = 1 + (n++ % 50_000);
                  return {
                    method: 'PUT',
                    path: PATH,
                    headers: owned(id),
                    body: JSON.stringify({ webhook_id: id, is_enabled: n % 2 === 0 }),
                  };
                };

// Deliver: two slices of 2,000 deliveries, the first (keys, connections) left out of the profile.
if (scenario === 'deliver') await throughput(worker, receiver, platform, 'warm', 200);
await send('Profiler.enable');
await send('Profiler.setSamplingInterval', { interval: 50 });
await send('Profiler.start');
const load =
  scenario === 'deliver'
    ? await throughput(worker, receiver, platform, 'profiled', 200).then(() => ({ requests: { total: 2000 } }))
    : await autocannon({
        url: worker.url,
        connections: scenario === 'filter' ? 4 : 16,
        duration: scenario === 'filter' ? 10 : 4,
        requests: [{ setupRequest: (r) => ({ ...r, ...request() }) }],
      });
const { profile } = await send('Profiler.stop');
ws.close();
await worker.dispose();
await receiver.close();

const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map();
let total = 0;
profile.samples.forEach((id, i) => {
  const { functionName, url, lineNumber } = nodes.get(id).callFrame;
  const key = `${functionName || '(anonymous)'} ${url.split('/').pop()}:${lineNumber}`;
  self.set(key, (self.get(key) ?? 0) + profile.timeDeltas[i]);
  total += profile.timeDeltas[i];
});
const idle = [...self].filter(([key]) => key.startsWith('(idle)')).reduce((t, [, v]) => t + v, 0);
console.log(
  `${floor ? 'floor' : 'service'}, scenario "${scenario}": ${load.requests.total} ${scenario === 'deliver' ? 'deliveries' : 'requests'}, ` +
    `${((total - idle) / load.requests.total).toFixed(0)} µs of busy isolate time per ${scenario === 'deliver' ? 'delivery' : 'request'}`,
);
console.log(`self time in the Worker's isolate:`);
for (const [key, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
  console.log(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${key}`);
}

// --inclusive <name>[,<name>]: the time under each named function (itself and what it calls), per
// request: what one piece of the path costs (filter: filterTargets, the content filters' whole work).
if (process.argv.includes('--inclusive')) {
  const names = process.argv[process.argv.indexOf('--inclusive') + 1].split(',');
  const selfOf = new Map();
  profile.samples.forEach((id, i) => {
    selfOf.set(id, (selfOf.get(id) ?? 0) + profile.timeDeltas[i]);
  });
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  for (const name of names) {
    let under = 0;
    for (const [id, t] of selfOf) {
      // Counted once, however often the name recurs above the sample.
      for (let at = id; at !== undefined; at = parent.get(at)) {
        if (nodes.get(at).callFrame.functionName === name) {
          under += t;
          break;
        }
      }
    }
    console.log(
      `under ${name}: ${(under / load.requests.total).toFixed(0)} µs per request (${((100 * under) / (total - idle)).toFixed(2)}% of busy time)`,
    );
  }
}

// --lines: where inside the hottest functions of the script the samples fell (line of the
// unminified bundle: its text), for self time that a function's builtins and inlined callees
// leave on the function itself.
if (process.argv.includes('--lines')) {
  const source = outputFiles[0].text.split('\n');
  const lines = new Map();
  for (const node of profile.nodes) {
    if (!node.callFrame.url.includes('script-') || node.positionTicks === undefined) continue;
    for (const { line, ticks } of node.positionTicks) {
      const key = `${node.callFrame.functionName || '(anonymous)'}:${line}`;
      lines.set(key, { line, ticks: (lines.get(key)?.ticks ?? 0) + ticks });
    }
  }
  const ticks = profile.samples.length;
  console.log('hottest lines of the script (share of all samples):');
  for (const [key, { line, ticks: t }] of [...lines].sort((a, b) => b[1].ticks - a[1].ticks).slice(0, 20)) {
    console.log(`${((100 * t) / ticks).toFixed(1).padStart(5)}%  ${key}  ${source[line - 1]?.trim().slice(0, 100)}`);
  }
}
