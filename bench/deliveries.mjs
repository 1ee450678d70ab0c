// The queue scenarios of `npm run bench`: delivery throughput, fan-out and latency, measured end
// to end (queue, consumer, D1, outbound fetch) against a local receiver, for the production
// bundle's `queue` export and for the floor's (bench/floor-consumer.ts).
//
// Miniflare's local queue (its broker Durable Object) hands the consumer one batch at a time: a
// batch leaves when it is full (max_batch_size) or when max_batch_timeout has passed since its
// first message, and the next leaves only once the consumer has returned. Cloudflare runs several
// consumer invocations at once when a backlog grows; here the throughput is one consumer's, batch
// after batch, so it measures what a batch costs: its D1 read, its attempts, its D1 write.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { addWebhooks, secretOf, startWorker } from './harness.mjs';
import { EVENT_PATH, nftData } from './scenarios.mjs';

/** The queue the service consumes deliveries from (its queue() dispatches on the name). */
export const QUEUE = 'nft-webhook-deliveries';
export const THROUGHPUT = 'delivery throughput';
export const FANOUT = 'fan-out (100 webhooks)';
export const LATENCY = 'latency (202 to 1st attempt)';
export const QUEUE_SCENARIOS = [THROUGHPUT, FANOUT, LATENCY];

// Webhooks at the receiver, by id: delivery throughput's ten applications of ten; fan-out's one of
// 100; latency's one of three.
const THROUGHPUT_APPS = 10;
const THROUGHPUT_PER_APP = 10;
const FANOUT_FIRST = 101;
const FANOUT_WEBHOOKS = 100;
const LATENCY_FIRST = 201;
const LATENCY_WEBHOOKS = 3;
/** Requests per measured slice whose signature and headers the receiver checks. */
const VERIFIED = 5;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (xs, q) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
};
const median = (xs) => quantile(xs, 0.5);

/**
 * The receiver: a Node HTTP server on loopback that answers 204 at once and notes when each
 * request arrived, its `webhook-id` and its path (`/hook/<webhook id>`). The first few requests
 * after each `reset` keep their headers and body, for `verify`.
 */
export async function startReceiver() {
  let arrivals = [];
  let kept = [];
  let waiter = null;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const t = performance.now();
      res.writeHead(204).end();
      arrivals.push({ t, id: req.headers['webhook-id'], path: req.url });
      if (kept.length < VERIFIED) {
        kept.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      }
      if (waiter !== null && arrivals.length >= waiter.count) {
        const { resolve, timer } = waiter;
        waiter = null;
        clearTimeout(timer);
        resolve(arrivals);
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    origin: `http://127.0.0.1:${port}`,
    get arrivals() {
      return arrivals;
    },
    reset() {
      arrivals = [];
      kept = [];
    },
    /** Resolves with the arrivals once there are `count`; rejects after `timeoutMs`. */
    waitFor(count, timeoutMs, what) {
      if (arrivals.length >= count) return Promise.resolve(arrivals);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiter = null;
          reject(new Error(`${what}: the receiver saw ${arrivals.length} of ${count} requests in ${timeoutMs} ms`));
        }, timeoutMs);
        waiter = { count, resolve, timer };
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
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

// CPU time of a worker's workerd process (Linux /proc): a steadier comparison than throughput on
// a shared machine, since it does not count the time other processes take from the two cores.
const CLOCK_TICKS_PER_S = 100;
/** The ids of this process's workerd children. */
function workerdProcesses() {
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
function cpuMs(id) {
  if (id === null) return null;
  try {
    const fields = readFileSync(`/proc/${id}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return null;
  }
}

/**
 * Starts one consumer under test (the bundle, or the floor's script) with the deliveries queue as
 * producer and consumer, and the receiver's webhooks.
 */
export async function startQueueWorker({
  script,
  scriptPath,
  receiver,
  batchSize,
  batchTimeout,
  inspectorPort,
  log,
  uncappedFloor = false,
  durableObjects,
}) {
  const before = workerdProcesses();
  const worker = await startWorker({
    script,
    scriptPath,
    durableObjects,
    apps: 0,
    perApp: 0,
    inspectorPort,
    log,
    // The floor's settings (the service has none of these names): D1 sessions, as the service
    // uses for publishing; six attempts open at once (bench/floor-consumer.ts).
    bindings: {
      WEBHOOK_URL_ALLOWED_ORIGINS: receiver.origin,
      FLOOR_SESSIONS: '1',
      FLOOR_OPEN_AT_ONCE: uncappedFloor ? '' : '6',
    },
    queueProducers: { DELIVERIES: QUEUE },
    queueConsumers: { [QUEUE]: { maxBatchSize: batchSize, maxBatchTimeout: batchTimeout, maxRetries: 100 } },
  });
  const url = (id) => `${receiver.origin}/hook/${id}`;
  for (let a = 0; a < THROUGHPUT_APPS; a++) {
    await addWebhooks(worker.db, {
      app: `tp-${a}`,
      firstId: 1 + a * THROUGHPUT_PER_APP,
      count: THROUGHPUT_PER_APP,
      url,
      secret: secretOf,
    });
  }
  await addWebhooks(worker.db, { app: 'fan', firstId: FANOUT_FIRST, count: FANOUT_WEBHOOKS, url, secret: secretOf });
  await addWebhooks(worker.db, { app: 'lat', firstId: LATENCY_FIRST, count: LATENCY_WEBHOOKS, url, secret: secretOf });
  worker.producer = await worker.mf.getQueueProducer('DELIVERIES');
  const started = [...workerdProcesses()].filter((id) => !before.has(id));
  worker.process = started.length === 1 ? started[0] : null;
  return worker;
}

/** Waits until no delivery is pending any more (the consumer recorded every attempt). */
async function settle(worker, what, timeoutMs = 60_000) {
  const started = performance.now();
  for (;;) {
    const row = await worker.db.prepare(`SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'`).first();
    if (row.n === 0) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`${what}: ${row.n} deliveries still pending`);
    await sleep(20);
  }
}

/**
 * Stores `n` pending deliveries, rounded up to a multiple of ten (n / 10 events, each to the ten
 * webhooks of one application), and returns their ids.
 */
async function preload(worker, tag, n) {
  const events = Math.ceil(n / THROUGHPUT_PER_APP);
  const createdAt = new Date().toISOString();
  const statements = [];
  for (let i = 0; i < events; i++) {
    const eventId = `evt_${tag}_${String(i).padStart(6, '0')}`;
    const payload = `{"type":"NEW_NFT","timestamp":"${createdAt}","data":${JSON.stringify(nftData(i))}}`;
    statements.push(
      worker.db
        .prepare('INSERT INTO events (event_id, app_id, type, payload, created_at) VALUES (?, ?, ?, ?, ?)')
        .bind(eventId, `tp-${i % THROUGHPUT_APPS}`, 'NEW_NFT', payload, createdAt),
    );
  }
  statements.push(
    worker.db
      .prepare(
        `INSERT INTO deliveries (event_id, webhook_id, app_id, next_attempt_at, created_at)
         SELECT e.event_id, w.webhook_id, w.app_id, e.created_at, e.created_at
         FROM events AS e JOIN webhooks AS w ON w.app_id = e.app_id
         WHERE substr(e.event_id, 1, length(?1)) = ?1 ORDER BY e.event_id, w.webhook_id`,
      )
      .bind(`evt_${tag}_`),
  );
  await worker.db.batch(statements);
  const { results } = await worker.db
    .prepare(
      `SELECT CAST(delivery_id AS TEXT) AS id FROM deliveries
       WHERE substr(event_id, 1, length(?1)) = ?1 ORDER BY delivery_id`,
    )
    .bind(`evt_${tag}_`)
    .all();
  return results.map((r) => r.id);
}

/**
 * Delivery throughput: `n` pending deliveries in D1, their `n` messages sent to the queue (in
 * sendBatch calls of 100, from Node through Miniflare's producer); timed from the first send
 * until the receiver has seen all `n`. Then until D1 has recorded all `n` as succeeded.
 */
export async function throughput(worker, receiver, tag, deliveries) {
  const ids = await preload(worker, tag, deliveries);
  const n = ids.length;
  receiver.reset();
  const cpuBefore = cpuMs(worker.process);
  const started = performance.now();
  for (let i = 0; i < ids.length; i += 100) {
    await worker.producer.sendBatch(
      ids.slice(i, i + 100).map((id) => ({ body: { delivery_id: id }, contentType: 'json' })),
    );
  }
  const arrivals = await receiver.waitFor(n, 120_000, `${THROUGHPUT} (${worker.name})`).catch(async (err) => {
    const { results } = await worker.db
      .prepare('SELECT status, attempts, COUNT(*) AS n FROM deliveries GROUP BY status, attempts')
      .all();
    throw new Error(`${err.message}; deliveries in D1: ${JSON.stringify(results)}`);
  });
  const seenMs = arrivals[n - 1].t - started;
  await settle(worker, THROUGHPUT);
  const recordedMs = performance.now() - started;
  const cpuAfter = cpuMs(worker.process);
  const { n: succeeded } = await worker.db
    .prepare(
      `SELECT COUNT(*) AS n FROM deliveries
       WHERE substr(event_id, 1, length(?1)) = ?1 AND status = 'succeeded' AND attempts = 1`,
    )
    .bind(`evt_${tag}_`)
    .first();
  if (succeeded !== n) throw new Error(`${THROUGHPUT}: ${succeeded} of ${n} deliveries recorded as succeeded`);
  const distinct = new Set(arrivals.map((a) => `${a.id} ${a.path}`)).size;
  if (distinct !== n) throw new Error(`${THROUGHPUT}: ${n - distinct} requests arrived twice`);
  receiver.verify(THROUGHPUT);
  return {
    deliveries: n,
    deliveries_per_s: n / (seenMs / 1000),
    seen_ms: seenMs,
    recorded_ms: recordedMs,
    // workerd's CPU per delivery: the consumer's isolate, its D1 (SQLite) and its network.
    cpu_us_per_delivery: cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1000) / n,
  };
}

/** Publishes one event through the worker's HTTP endpoint; resolves with its id once 202 came. */
async function publish(worker, token, appId, n) {
  const res = await fetch(worker.url + EVENT_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ app_id: appId, type: 'NEW_NFT', data: nftData(n) }),
  });
  const text = await res.text();
  if (res.status !== 202) throw new Error(`publish: expected 202, got ${res.status} ${text}`);
  return JSON.parse(text).value.event_id;
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
  if (new Set(arrivals.map((a) => a.path)).size !== FANOUT_WEBHOOKS) throw new Error(`${FANOUT}: a webhook got two`);
  receiver.verify(FANOUT);
  await settle(worker, FANOUT);
  return { ms: last, accepted_ms: accepted };
}

/**
 * Latency: `events` events to the application with three webhooks, one every 1000 / `rate` ms
 * (not waiting for replies); per delivery, the time from its event's 202 to its first attempt at
 * the receiver (and from the publish request's start, to show what the 202 itself took).
 */
async function latency(worker, receiver, token, events, rate, offset) {
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
      publish(worker, token, 'lat', offset + i).then((id) => {
        accepted.set(id, performance.now());
        sent.set(id, t);
      }),
    );
  }
  await Promise.all(requests);
  const arrivals = await receiver.waitFor(events * LATENCY_WEBHOOKS, 60_000, LATENCY);
  const fromAccepted = [];
  const fromSent = [];
  const seen = new Set();
  for (const a of arrivals) {
    const key = `${a.id} ${a.path}`;
    if (seen.has(key) || !accepted.has(a.id)) continue;
    seen.add(key);
    fromAccepted.push(a.t - accepted.get(a.id));
    fromSent.push(a.t - sent.get(a.id));
  }
  if (seen.size !== events * LATENCY_WEBHOOKS) throw new Error(`${LATENCY}: ${seen.size} distinct first attempts`);
  receiver.verify(LATENCY);
  await settle(worker, LATENCY);
  return { fromAccepted, fromSent, acceptMs: [...accepted].map(([id, t]) => t - sent.get(id)) };
}

const ORDER = ['floor', 'service', 'service', 'floor'];

/** Delivery throughput, in ABBA order: each worker's deliveries over the time of its two slices. */
async function measureThroughput({ workers, receiver, options }) {
  const parts = { floor: [], service: [] };
  for (const [i, name] of ORDER.entries()) {
    parts[name].push(await throughput(workers[name], receiver, `tp${i}`, options.deliveries));
  }
  const out = Object.fromEntries(
    Object.entries(parts).map(([name, p]) => [
      name,
      {
        deliveries_per_s: (p[0].deliveries + p[1].deliveries) / ((p[0].seen_ms + p[1].seen_ms) / 1000),
        seen_ms: p.map((x) => Math.round(x.seen_ms)),
        recorded_ms: p.map((x) => Math.round(x.recorded_ms)),
        cpu_us_per_delivery: p.some((x) => x.cpu_us_per_delivery === null)
          ? null
          : (p[0].cpu_us_per_delivery + p[1].cpu_us_per_delivery) / 2,
      },
    ]),
  );
  out.ratio = out.service.deliveries_per_s / out.floor.deliveries_per_s;
  const cpu = (x) => (x.cpu_us_per_delivery === null ? '' : ` (${Math.round(x.cpu_us_per_delivery)} µs CPU each)`);
  out.line =
    `service ${Math.round(out.service.deliveries_per_s)} deliveries/s${cpu(out.service)}, ` +
    `floor ${Math.round(out.floor.deliveries_per_s)}${cpu(out.floor)}`;
  return out;
}

/** Fan-out, in ABBA order, `options.fanoutEvents` events per worker. */
async function measureFanout({ workers, receiver, token, options }) {
  const parts = { floor: [], service: [] };
  let n = 0;
  for (const name of ORDER) {
    for (let i = 0; i < options.fanoutEvents / 2; i++) {
      parts[name].push(await fanout(workers[name], receiver, token, n++));
    }
  }
  const summary = (p) => ({
    ms: p.map((x) => Math.round(x.ms)),
    median_ms: median(p.map((x) => x.ms)),
    accepted_ms: median(p.map((x) => x.accepted_ms)),
  });
  const out = { service: summary(parts.service), floor: summary(parts.floor) };
  out.line = `service ${Math.round(out.service.median_ms)} ms, floor ${Math.round(out.floor.median_ms)} ms (median)`;
  return out;
}

/** Latency, in ABBA order, `options.latencyEvents` events per worker (half in each slice). */
async function measureLatency({ workers, receiver, token, options }) {
  const parts = { floor: [], service: [] };
  for (const [i, name] of ORDER.entries()) {
    const events = options.latencyEvents / 2;
    parts[name].push(await latency(workers[name], receiver, token, events, options.latencyRate, i * events));
  }
  const summary = (p) => {
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
  const out = { service: summary(parts.service), floor: summary(parts.floor) };
  const text = (x) => `p50 ${x.p50_ms.toFixed(1)} p99 ${x.p99_ms.toFixed(1)} ms`;
  out.line = `service ${text(out.service)}, floor ${text(out.floor)}`;
  return out;
}

const MEASURES = { [THROUGHPUT]: measureThroughput, [FANOUT]: measureFanout, [LATENCY]: measureLatency };

/**
 * Runs the selected queue scenarios once against both workers, in ABBA order (floor, service,
 * service, floor), and returns per scenario the service's and the floor's figures, or the error
 * that stopped it (a stall, a wrong request: the benchmark reports it and goes on).
 */
export async function runQueueScenarios({ selected, workers, receiver, token, options, log }) {
  const out = {};
  // Warm-up, unmeasured, as the HTTP scenarios have theirs: each worker's isolate compiled, its
  // signing keys opened (both consumers keep them per isolate) and its connections to the receiver made.
  for (const name of ['floor', 'service']) {
    try {
      await throughput(workers[name], receiver, `warm-${name}`, 200);
      await fanout(workers[name], receiver, token, 0);
    } catch (err) {
      for (const scenario of QUEUE_SCENARIOS.filter((n) => selected.includes(n))) {
        out[scenario] = { error: `warm-up of the ${name}: ${err.message}` };
      }
      return out;
    }
  }
  for (const name of QUEUE_SCENARIOS.filter((n) => selected.includes(n))) {
    try {
      const { line, ...figures } = await MEASURES[name]({ workers, receiver, token, options });
      out[name] = figures;
      log(`${name.padEnd(24)} ${line}`);
    } catch (err) {
      out[name] = { error: err.message };
      log(`${name.padEnd(24)} FAILED: ${err.message}`);
    }
  }
  return out;
}
