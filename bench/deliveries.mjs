// The delivery scenarios of `npm run bench`: delivery throughput (at one host, and spread over
// ten), ten events to 100 webhooks, fan-out, latency and isolation, measured end to end (publish
// over HTTP, the application's object, the endpoints' objects and their alarms, outbound fetch)
// against a local receiver, for the production bundle, for the floor (bench/floor-objects.ts: a
// floor Worker, FloorApplication and FloorEndpoint objects) and, with --baseline, for the release
// before's bundle.
//
// Each endpoint object sends on its own alarm, six requests at once. The service also keeps each
// endpoint to ENDPOINT_RATE_LIMIT attempts a second (50 by default); the bench sets it to 1,000
// (the most it allows), so that the figures measure the work, not the limit; throughput spreads its
// deliveries over ten endpoints besides.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { addWebhooks, option, secretOf, sleep, startWorker } from './harness.mjs';
import { EVENT_PATH, EVENTS_PATH, nftData } from './scenarios.mjs';

/**
 * Hosts the second throughput scenario's webhooks are spread over (--throughput-hosts, 10 by
 * default): the receiver listens on as many ports, each another host (scheme, host and port) for
 * the service's per-host budget, ENDPOINT_RATE_LIMIT a second for an application's webhooks at one
 * host together; the floor has no such budget.
 */
const THROUGHPUT_HOSTS = option('--throughput-hosts', 10);

export const THROUGHPUT = 'delivery throughput';
export const THROUGHPUT_SPREAD = `delivery throughput (${THROUGHPUT_HOSTS} hosts)`;
export const TEN_TO_100 = '10 events to 100 webhooks';
export const FANOUT = 'fan-out (100 webhooks)';
export const LATENCY = 'latency (202 to 1st attempt)';
export const ISOLATION = 'isolation (1 slow endpoint)';
export const QUEUE_SCENARIOS = [THROUGHPUT, THROUGHPUT_SPREAD, TEN_TO_100, FANOUT, LATENCY, ISOLATION];

/** The service's settings for the delivery scenarios (the floor has no rate limit). */
export const DELIVERY_BINDINGS = { ENDPOINT_RATE_LIMIT: '1000' };

// Webhooks at the receiver, by id: delivery throughput's application of ten at one host, and its
// application of ten spread over THROUGHPUT_HOSTS hosts; fan-out's one of 100; latency's one of
// three; isolation's two of three healthy ones, one of them with a slow fourth; ten events to 100
// webhooks' one of 100.
const THROUGHPUT_FIRST = 1;
const THROUGHPUT_WEBHOOKS = 10;
const SPREAD_FIRST = 11;
const FANOUT_FIRST = 101;
const FANOUT_WEBHOOKS = 100;
const TEN_FIRST = 401;
const TEN_WEBHOOKS = 100;
const TEN_EVENTS = 10;
const LATENCY_FIRST = 201;
const LATENCY_WEBHOOKS = 3;
const ISO_FAST_FIRST = 301;
const ISO_SLOW_FIRST = 311;
const ISO_HEALTHY = 3;
/** How long the slow endpoint takes to answer (under the 15 s timeout). */
export const SLOW_MS = 3000;
/** Requests per measured slice whose signature and headers the receiver checks. */
const VERIFIED = 5;

const quantile = (xs, q) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
};
const median = (xs) => quantile(xs, 0.5);

/** An error's message, with its cause's (Node's fetch says only "fetch failed"). */
const reason = (err) => (err.cause === undefined ? err.message : `${err.message} (${err.cause.message ?? err.cause})`);

/**
 * The receiver: a Node HTTP server on loopback that answers 204 at once and notes when each
 * request arrived, its `webhook-id` and its path (`/hook/<webhook id>`). The first few requests
 * after each `reset` keep their headers and body, for `verify`. `/slow/<id>` answers after
 * SLOW_MS (noted when it arrived); `/hold/<id>` never answers (the sender's timeout ends it) and
 * is not noted.
 */
export async function startReceiver() {
  let arrivals = [];
  let kept = [];
  let waiter = null;
  const handle = (req, res) => {
    if (req.url.startsWith('/hold/')) {
      req.resume();
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const t = performance.now();
      if (req.url.startsWith('/slow/')) setTimeout(() => res.writeHead(204).end(), SLOW_MS);
      else res.writeHead(204).end();
      arrivals.push({ t, id: req.headers['webhook-id'], path: req.url });
      if (kept.length < VERIFIED && req.url.startsWith('/hook/')) {
        kept.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      }
      if (waiter?.filter(arrivals[arrivals.length - 1])) waiter.seen++;
      if (waiter !== null && waiter.seen >= waiter.count) {
        const { resolve, timer } = waiter;
        waiter = null;
        clearTimeout(timer);
        resolve(arrivals);
      }
    });
  };

  // THROUGHPUT_HOSTS listeners, each its own port: another host (scheme, host and port) for the
  // service's per-host budget; the first is `origin`, where every other scenario's webhooks are.
  const servers = [];
  for (let i = 0; i < Math.max(1, THROUGHPUT_HOSTS); i++) {
    const server = createServer(handle);
    server.keepAliveTimeout = 60_000;
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
  }
  const origins = servers.map((server) => `http://127.0.0.1:${server.address().port}`);
  return {
    origin: origins[0],
    origins,
    get arrivals() {
      return arrivals;
    },
    reset() {
      arrivals = [];
      kept = [];
    },
    /** Resolves with the arrivals once there are `count` (that `filter` keeps); rejects after `timeoutMs`. */
    waitFor(count, timeoutMs, what, filter = () => true) {
      const seen = arrivals.filter(filter).length;
      if (seen >= count) return Promise.resolve(arrivals);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const saw = waiter?.seen;
          waiter = null;
          reject(new Error(`${what}: the receiver saw ${saw} of ${count} requests in ${timeoutMs} ms`));
        }, timeoutMs);
        waiter = { count, resolve, timer, filter, seen };
      });
    },
    /** Checks the kept requests: Standard Webhooks signature (standardwebhooks), headers, JSON body. */
    verify(what) {
      if (kept.length === 0) throw new Error(`${what}: no request to verify`);
      for (const { path, headers, body } of kept) {
        const webhookId = /^\/hook\/(\d+)$/.exec(path)?.[1];
        if (webhookId === undefined) throw new Error(`${what}: request to ${path}`);
        // Throws unless webhook-id, webhook-timestamp and webhook-signature sign this body.
        new Webhook(secretOf(webhookId)).verify(body, headers);
        if (headers['content-type'] !== 'application/json') {
          throw new Error(`${what}: content-type ${headers['content-type']}`);
        }
        const payload = JSON.parse(body);
        if (payload.type !== 'NEW_NFT' || typeof payload.data !== 'object') throw new Error(`${what}: body ${body}`);
      }
    },
    close: () =>
      new Promise((resolve) => {
        let open = servers.length;
        for (const one of servers) {
          one.close(() => {
            if (--open === 0) resolve();
          });
          one.closeAllConnections();
        }
      }),
  };
}

// CPU time of a worker's workerd process (Linux /proc): a steadier comparison than throughput on
// a shared machine, since it does not count the time other processes take from the two cores.
const CLOCK_TICKS_PER_S = 100;
/** The ids of this process's workerd children. */
export function workerdProcesses() {
  const ids = new Set();
  try {
    for (const id of readdirSync('/proc')) {
      if (!/^\d+$/.test(id)) continue;
      try {
        const stat = readFileSync(`/proc/${id}/stat`, 'utf8');
        const [, rest] = stat.split(') ');
        if (stat.includes('(workerd)') && rest?.split(' ')[1] === String(process.pid)) ids.add(id);
      } catch {
        // Gone meanwhile.
      }
    }
  } catch {
    // Not Linux: no CPU figures.
  }
  return ids;
}
/** User and system CPU time of a process so far, in ms; null when it cannot be read. */
export function cpuMs(id) {
  if (id === null) return null;
  try {
    const fields = readFileSync(`/proc/${id}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return null;
  }
}

/**
 * Starts one worker under test (the bundle, the release before's, or the floor's script) with its
 * objects, the tool worker beside it (bench/harness.mjs) and the receiver's webhooks, with signing
 * secrets. `schema` and `queueProducers`: the release before's (revisionConfig).
 */
export async function startDeliveryWorker({
  script,
  scriptPath,
  durableObjects,
  receiver,
  inspectorPort,
  log,
  persist,
  countRows = false,
  schema,
  queueProducers,
}) {
  const before = workerdProcesses();
  const worker = await startWorker({
    countRows,
    script,
    scriptPath,
    durableObjects,
    tool: true,
    persist,
    apps: 0,
    perApp: 0,
    inspectorPort,
    log,
    schema,
    queueProducers,
    bindings: { WEBHOOK_URL_ALLOWED_ORIGINS: receiver.origins.join(' '), FLOOR_SESSIONS: '1', ...DELIVERY_BINDINGS },
  });
  const hook = (id) => `${receiver.origin}/hook/${id}`;
  const add = (app, firstId, count, url = hook) =>
    addWebhooks(worker.db, { app, firstId, count, url, secret: secretOf });
  await add('tp', THROUGHPUT_FIRST, THROUGHPUT_WEBHOOKS);
  await add(
    'tp-spread',
    SPREAD_FIRST,
    THROUGHPUT_WEBHOOKS,
    (id) => `${receiver.origins[(id - SPREAD_FIRST) % receiver.origins.length]}/hook/${id}`,
  );
  await add('fan', FANOUT_FIRST, FANOUT_WEBHOOKS);
  await add('ten', TEN_FIRST, TEN_WEBHOOKS);
  await add('lat', LATENCY_FIRST, LATENCY_WEBHOOKS);
  await add('iso-fast', ISO_FAST_FIRST, ISO_HEALTHY);
  await add('iso-slow', ISO_SLOW_FIRST, ISO_HEALTHY);
  await add('iso-slow', ISO_SLOW_FIRST + ISO_HEALTHY, 1, (id) => `${receiver.origin}/slow/${id}`);
  const started = [...workerdProcesses()].filter((id) => !before.has(id));
  worker.process = started.length === 1 ? started[0] : null;
  return worker;
}

const range = (first, count) => Array.from({ length: count }, (_, i) => String(first + i));

/** The deliveries' counters of these webhooks' endpoint objects, summed (through the tool). */
export const countsOf = (worker, webhookIds) => worker.tool('/stats', { webhookIds, since: '2000-01-01T00:00:00Z' });

/** Waits until none of these webhooks' deliveries is pending any more; returns the counters. */
async function settle(worker, webhookIds, what, timeoutMs = 60_000) {
  const started = performance.now();
  for (;;) {
    const counts = await countsOf(worker, webhookIds);
    if (counts.pending === 0) return counts;
    if (performance.now() - started > timeoutMs) throw new Error(`${what}: ${counts.pending} deliveries still pending`);
    await sleep(50);
  }
}

/** Node's fetch found the kept-alive connection closed by the worker before any reply (it retries only GETs). */
const closedBeforeReply = (err) =>
  err instanceof TypeError && ['UND_ERR_SOCKET', 'ECONNRESET'].includes(err.cause?.code);

async function post(worker, token, path, body) {
  const request = () =>
    fetch(worker.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
  // Sent again once, on another connection. Should the first have been stored after all: a batch
  // carries publisher ids (the same events, stored once); fan-out sees a request of another event
  // and fails; latency and isolation count only the attempts of the events they were answered for.
  const res = await request().catch((err) => {
    if (!closedBeforeReply(err)) throw err;
    return request();
  });
  const text = await res.text();
  if (res.status !== 202) throw new Error(`publish: expected 202, got ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text).value;
}

/** Publishes one event through the worker's HTTP endpoint; resolves with its id once 202 came. */
async function publish(worker, token, appId, n) {
  return (await post(worker, token, EVENT_PATH, { app_id: appId, type: 'NEW_NFT', data: nftData(n) })).event_id;
}

/** Publishes `count` events of `appId` in batches of `size` (`parallel` requests at once), with ids `tag`-n. */
export async function publishMany(worker, token, appId, tag, count, parallel = 2, size = 100) {
  let next = 0;
  const one = async () => {
    while (next < count) {
      const from = next;
      next = Math.min(count, next + size);
      await post(worker, token, EVENTS_PATH, {
        events: Array.from({ length: next - from }, (_, k) => ({
          app_id: appId,
          type: 'NEW_NFT',
          id: `${tag}-${from + k}`,
          data: nftData(from + k),
        })),
      });
    }
  };
  await Promise.all(Array.from({ length: parallel }, one));
}

/** The applications the deliveries/s scenarios publish to, their webhooks, and how they are named. */
const TARGETS = {
  [THROUGHPUT]: { app: 'tp', first: THROUGHPUT_FIRST, webhooks: THROUGHPUT_WEBHOOKS, what: THROUGHPUT },
  [THROUGHPUT_SPREAD]: {
    app: 'tp-spread',
    first: SPREAD_FIRST,
    webhooks: THROUGHPUT_WEBHOOKS,
    what: THROUGHPUT_SPREAD,
  },
  [TEN_TO_100]: { app: 'ten', first: TEN_FIRST, webhooks: TEN_WEBHOOKS, what: TEN_TO_100 },
};

/**
 * Deliveries/s: `events` events published (batches of `batch`, 100 by default: 1,000 deliveries
 * per request) to the application of `target` (delivery throughput's ten webhooks at one host by
 * default); timed from the first publish request until the receiver has seen all events x its
 * webhooks. Then until every endpoint object has recorded them (none pending); each must have
 * succeeded after one attempt, none may be missing or have arrived twice.
 */
export async function throughput(worker, receiver, token, tag, events, batch = 100, target = TARGETS[THROUGHPUT]) {
  const { app, first, webhooks, what } = target;
  const hooks = range(first, webhooks);
  const before = await countsOf(worker, hooks);
  const n = events * webhooks;
  receiver.reset();
  const cpuBefore = cpuMs(worker.process);
  const started = performance.now();
  await publishMany(worker, token, app, tag, events, 2, batch);
  const publishedMs = performance.now() - started;
  const arrivals = await receiver.waitFor(n, 180_000, `${what} (${worker.name})`);
  const seenMs = arrivals[n - 1].t - started;
  const after = await settle(worker, hooks, what);
  const recordedMs = performance.now() - started;
  const cpuAfter = cpuMs(worker.process);
  const succeeded = after.succeeded - before.succeeded;
  if (succeeded !== n) throw new Error(`${what}: ${succeeded} of ${n} deliveries recorded as succeeded`);
  // `arrivals` is the receiver's own list: it holds what came while the objects settled too.
  noneLostOrDoubled(arrivals, n, what);
  receiver.verify(what);
  return {
    deliveries: n,
    deliveries_per_s: n / (seenMs / 1000),
    published_ms: publishedMs,
    seen_ms: seenMs,
    recorded_ms: recordedMs,
    // workerd's CPU per delivery: publishing, the objects' storage, the sending.
    cpu_us_per_delivery: cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1000) / n,
  };
}

/** Throws unless `arrivals` (those `keep` keeps) are `n` requests, no two of one event to one webhook. */
function noneLostOrDoubled(arrivals, n, what, keep = () => true) {
  const kept = arrivals.filter(keep);
  const distinct = new Set(kept.map((a) => `${a.id} ${a.path}`)).size;
  if (distinct !== n) throw new Error(`${what}: ${distinct} distinct requests of ${n}`);
  if (kept.length !== distinct) throw new Error(`${what}: ${kept.length - distinct} requests arrived twice`);
}

/**
 * Fan-out: one event to the application with 100 webhooks; timed from the publish request until
 * the receiver has seen the 100th first attempt.
 */
async function fanout(worker, receiver, token, n) {
  receiver.reset();
  const started = performance.now();
  const eventId = await publish(worker, token, 'fan', n);
  const accepted = performance.now() - started;
  const arrivals = await receiver.waitFor(FANOUT_WEBHOOKS, 60_000, FANOUT);
  const last = arrivals[FANOUT_WEBHOOKS - 1].t - started;
  if (arrivals.some((a) => a.id !== eventId)) throw new Error(`${FANOUT}: a request of another event arrived`);
  await settle(worker, range(FANOUT_FIRST, FANOUT_WEBHOOKS), FANOUT);
  noneLostOrDoubled(arrivals, FANOUT_WEBHOOKS, FANOUT);
  receiver.verify(FANOUT);
  return { ms: last, accepted_ms: accepted };
}

/**
 * Events to `app` at a steady `rate`, `events` of them (not waiting for replies); per delivery to a
 * `/hook/` webhook, the time from its event's 202 reaching the client to its first attempt reaching
 * the receiver (and from the publish request's start). `healthy`: how many such webhooks it has.
 */
async function steady(worker, receiver, token, { app, healthy, events, rate, offset, what }) {
  receiver.reset();
  const accepted = new Map();
  const sent = new Map();
  const requests = [];
  const started = performance.now();
  for (let i = 0; i < events; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const t = performance.now();
    requests.push(
      publish(worker, token, app, offset + i).then((id) => {
        accepted.set(id, performance.now());
        sent.set(id, t);
      }),
    );
  }
  await Promise.all(requests);
  const isHook = (a) => a.path.startsWith('/hook/') && accepted.has(a.id);
  const arrivals = await receiver.waitFor(events * healthy, 60_000, what, isHook);
  const fromAccepted = [];
  const fromSent = [];
  const seen = new Set();
  for (const a of arrivals) {
    const key = `${a.id} ${a.path}`;
    if (seen.has(key) || !isHook(a)) continue;
    seen.add(key);
    fromAccepted.push(a.t - accepted.get(a.id));
    fromSent.push(a.t - sent.get(a.id));
  }
  noneLostOrDoubled(arrivals, events * healthy, what, isHook);
  receiver.verify(what);
  return { fromAccepted, fromSent, acceptMs: [...accepted].map(([id, t]) => t - sent.get(id)) };
}

async function latency(worker, receiver, token, events, rate, offset) {
  const out = await steady(worker, receiver, token, {
    app: 'lat',
    healthy: LATENCY_WEBHOOKS,
    events,
    rate,
    offset,
    what: LATENCY,
  });
  await settle(worker, range(LATENCY_FIRST, LATENCY_WEBHOOKS), LATENCY);
  return out;
}

/**
 * Runs `slice(name, i)` for the workers `names` in ABBA order (floor, service, service, floor) or,
 * with the release before, ABCCBA (floor, service, baseline, baseline, service, floor), so the
 * machine's drift weighs on all alike; returns each worker's slices. A slice of the release before
 * that fails ends its part (its error in `baselineError`), never the others'.
 */
async function interleaved(names, slice) {
  const parts = Object.fromEntries(names.map((name) => [name, []]));
  let baselineError;
  for (const [i, name] of [...names, ...[...names].reverse()].entries()) {
    if (name === 'baseline') {
      if (baselineError !== undefined) continue;
      try {
        parts.baseline.push(await slice(name, i));
      } catch (err) {
        baselineError = reason(err);
      }
    } else {
      try {
        parts[name].push(await slice(name, i));
      } catch (err) {
        throw new Error(`the ${name}'s slice: ${reason(err)}`);
      }
    }
  }
  if (baselineError !== undefined) delete parts.baseline;
  return { parts, baselineError };
}

/** The release before's part of a scenario's figures: its own, or why it has none. */
const baselinePart = (names, parts, baselineError, figures) =>
  !names.includes('baseline')
    ? {}
    : baselineError !== undefined
      ? { baseline_error: baselineError }
      : { baseline: figures(parts.baseline) };

/**
 * Deliveries/s of one of TARGETS (delivery throughput at one host or spread, ten events to 100
 * webhooks), interleaved: each worker's deliveries over the time of its two slices.
 */
function measureRate(scenario, eventsOf, batchOf) {
  return async ({ names, workers, receiver, token, options }) => {
    const target = TARGETS[scenario];
    const { parts, baselineError } = await interleaved(names, (name, i) =>
      throughput(workers[name], receiver, token, `${target.app}${i}`, eventsOf(options), batchOf(options), target),
    );
    const figures = (p) => ({
      deliveries_per_s: (p[0].deliveries + p[1].deliveries) / ((p[0].seen_ms + p[1].seen_ms) / 1000),
      published_ms: p.map((x) => Math.round(x.published_ms)),
      seen_ms: p.map((x) => Math.round(x.seen_ms)),
      recorded_ms: p.map((x) => Math.round(x.recorded_ms)),
      cpu_us_per_delivery: p.some((x) => x.cpu_us_per_delivery === null)
        ? null
        : (p[0].cpu_us_per_delivery + p[1].cpu_us_per_delivery) / 2,
    });
    const out = {
      service: figures(parts.service),
      floor: figures(parts.floor),
      ...baselinePart(names, parts, baselineError, figures),
    };
    out.ratio = out.service.deliveries_per_s / out.floor.deliveries_per_s;
    if (out.baseline) out.ratio_to_baseline = out.service.deliveries_per_s / out.baseline.deliveries_per_s;
    const cpu = (x) => (x.cpu_us_per_delivery === null ? '' : ` (${Math.round(x.cpu_us_per_delivery)} µs CPU each)`);
    out.line =
      `service ${Math.round(out.service.deliveries_per_s)} deliveries/s${cpu(out.service)}, ` +
      `floor ${Math.round(out.floor.deliveries_per_s)}${cpu(out.floor)}` +
      (out.baseline ? `, baseline ${Math.round(out.baseline.deliveries_per_s)}${cpu(out.baseline)}` : '') +
      (out.baseline_error ? `; baseline: ${out.baseline_error}` : '');
    return out;
  };
}

/** Delivery throughput: `options.deliveries` per slice (events of ten deliveries, `options.throughputBatch` a request). */
const throughputEvents = (options) => options.deliveries / THROUGHPUT_WEBHOOKS;
const throughputBatch = (options) => options.throughputBatch;

/** Fan-out, interleaved, `options.fanoutEvents` events per worker. */
async function measureFanout({ names, workers, receiver, token, options }) {
  let n = 0;
  const { parts, baselineError } = await interleaved(names, async (name) => {
    const slice = [];
    for (let i = 0; i < options.fanoutEvents / 2; i++) slice.push(await fanout(workers[name], receiver, token, n++));
    return slice;
  });
  const summary = (slices) => {
    const p = slices.flat();
    return {
      ms: p.map((x) => Math.round(x.ms)),
      median_ms: median(p.map((x) => x.ms)),
      accepted_ms: median(p.map((x) => x.accepted_ms)),
    };
  };
  const out = {
    service: summary(parts.service),
    floor: summary(parts.floor),
    ...baselinePart(names, parts, baselineError, summary),
  };
  out.line =
    `service ${Math.round(out.service.median_ms)} ms, floor ${Math.round(out.floor.median_ms)} ms` +
    (out.baseline ? `, baseline ${Math.round(out.baseline.median_ms)} ms` : '') +
    ' (median)' +
    (out.baseline_error ? `; baseline: ${out.baseline_error}` : '');
  return out;
}

const summarise = (p) => {
  const accepted = p.flatMap((x) => x.fromAccepted);
  const sent = p.flatMap((x) => x.fromSent);
  const accept = p.flatMap((x) => x.acceptMs);
  return {
    samples: accepted.length,
    samples_ms: accepted,
    p50_ms: quantile(accepted, 0.5),
    p99_ms: quantile(accepted, 0.99),
    max_ms: Math.max(...accepted),
    from_request_p50_ms: quantile(sent, 0.5),
    from_request_p99_ms: quantile(sent, 0.99),
    publish_p50_ms: quantile(accept, 0.5),
    publish_p99_ms: quantile(accept, 0.99),
  };
};

/** Latency, interleaved, `options.latencyEvents` events per worker (half in each slice). */
async function measureLatency({ names, workers, receiver, token, options }) {
  const events = options.latencyEvents / 2;
  const { parts, baselineError } = await interleaved(names, (name, i) =>
    latency(workers[name], receiver, token, events, options.latencyRate, i * events),
  );
  const out = {
    service: summarise(parts.service),
    floor: summarise(parts.floor),
    ...baselinePart(names, parts, baselineError, summarise),
  };
  const text = (x) => `p50 ${x.p50_ms.toFixed(1)} p99 ${x.p99_ms.toFixed(1)} ms`;
  out.line =
    `service ${text(out.service)}, floor ${text(out.floor)}` +
    (out.baseline ? `, baseline ${text(out.baseline)}` : '') +
    (out.baseline_error ? `; baseline: ${out.baseline_error}` : '');
  return out;
}

/**
 * Isolation: per worker (one after the other: floor, service, baseline), `options.latencyEvents`
 * events at `options.latencyRate` a second to an application of three healthy webhooks, then as
 * many to one of three healthy webhooks and a fourth that answers after SLOW_MS (its backlog
 * grows: six at once, SLOW_MS each); the healthy webhooks' publish-to-arrival (from the 202) with
 * and without the slow one.
 */
async function measureIsolation({ names, workers, receiver, token, options }) {
  const out = {};
  for (const name of names) {
    const run = (app, offset) =>
      steady(workers[name], receiver, token, {
        app,
        healthy: ISO_HEALTHY,
        events: options.latencyEvents,
        rate: options.latencyRate,
        offset,
        what: `${ISOLATION} (${name}, ${app})`,
      });
    try {
      const alone = summarise([await run('iso-fast', 0)]);
      const slowRun = await run('iso-slow', options.latencyEvents);
      const slowArrivals = receiver.arrivals.filter((a) => a.path.startsWith('/slow/')).length;
      const withSlow = { ...summarise([slowRun]), slow_endpoint_arrivals: slowArrivals };
      delete alone.samples_ms;
      delete withSlow.samples_ms;
      out[name] = { without_slow: alone, with_slow: withSlow };
    } catch (err) {
      if (name !== 'baseline') throw new Error(`the ${name}: ${reason(err)}`);
      out.baseline_error = reason(err);
    }
  }
  const text = (x) => `p50 ${x.without_slow.p50_ms.toFixed(1)} -> ${x.with_slow.p50_ms.toFixed(1)} ms`;
  out.line =
    `healthy endpoints' 202-to-arrival: service ${text(out.service)}, floor ${text(out.floor)}` +
    (out.baseline ? `, baseline ${text(out.baseline)}` : '') +
    (out.baseline_error ? `; baseline: ${out.baseline_error}` : '');
  return out;
}

const MEASURES = {
  [THROUGHPUT]: measureRate(THROUGHPUT, throughputEvents, throughputBatch),
  [THROUGHPUT_SPREAD]: measureRate(THROUGHPUT_SPREAD, throughputEvents, throughputBatch),
  // Ten events in one batch: 1,000 first attempts.
  [TEN_TO_100]: measureRate(
    TEN_TO_100,
    () => TEN_EVENTS,
    () => TEN_EVENTS,
  ),
  [FANOUT]: measureFanout,
  [LATENCY]: measureLatency,
  [ISOLATION]: measureIsolation,
};

/**
 * Runs the selected delivery scenarios once against the workers (floor and service, and the
 * release before when `workers.baseline` is there), interleaved (ABBA, or ABCCBA), and returns per
 * scenario each worker's figures, or the error that stopped it (a stall, a wrong request: the
 * benchmark reports it and goes on). The release before failing (its warm-up, or a slice) costs
 * only its own figures: `baseline_error` says why.
 */
export async function runQueueScenarios({ selected, workers, receiver, token, options, log }) {
  const out = {};
  const scenarios = QUEUE_SCENARIOS.filter((n) => selected.includes(n));
  const names = ['floor', 'service', 'baseline'].filter((name) => workers[name] !== undefined);
  // Warm-up, unmeasured: each worker's isolate compiled, its objects made, its signing keys
  // opened and its connections to the receiver made.
  let baselineError;
  for (const name of names) {
    try {
      await throughput(workers[name], receiver, token, `warm-${name}`, 20);
      await fanout(workers[name], receiver, token, 0);
    } catch (err) {
      if (name === 'baseline') {
        baselineError = `warm-up: ${reason(err)}`;
        log(`baseline warm-up FAILED: ${reason(err)}`);
        continue;
      }
      for (const scenario of scenarios) out[scenario] = { error: `warm-up of the ${name}: ${reason(err)}` };
      return out;
    }
  }
  const measured = baselineError === undefined ? names : names.filter((name) => name !== 'baseline');
  for (const name of scenarios) {
    try {
      const { line, ...figures } = await MEASURES[name]({ names: measured, workers, receiver, token, options });
      out[name] = baselineError === undefined ? figures : { ...figures, baseline_error: baselineError };
      log(`${name.padEnd(24)} ${line}`);
    } catch (err) {
      out[name] = { error: reason(err) };
      log(`${name.padEnd(24)} FAILED: ${reason(err)}`);
    }
  }
  return out;
}
