// The load generator: autocannon in a thread of its own, so that the benchmark's main thread,
// which also reads the workers' output (their log lines) and runs the queue scenarios' receiver,
// never takes its time. Run as a module it is the thread; imported, `load` hands it one slice at
// a time. One thread serves the whole benchmark: starting a thread (and loading autocannon) for
// every slice cost about two seconds per scenario.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';
import { scenarioList } from './scenarios.mjs';

let thread = null;
let nextJob = 0;
const pending = new Map();

/**
 * Drives `url` with the named scenario's requests for `seconds` over `connections` keep-alive
 * connections, numbering requests from `counter.n` (advanced, so ids meant to exist are never
 * reused across slices). The tokens of the first call serve every later one.
 */
export function load({ url, scenario, seconds, connections, counter, tokens, newApps, platform }) {
  if (thread === null) {
    thread = new Worker(new URL(import.meta.url), { workerData: { tokens, newApps, platform } });
    thread.on('message', ({ job, result, next, error }) => {
      const { resolve, reject, counter: c } = pending.get(job);
      pending.delete(job);
      if (pending.size === 0) thread.unref();
      if (error !== undefined) return reject(new Error(error));
      c.n = next;
      resolve(result);
    });
    thread.on('error', (err) => {
      for (const { reject } of pending.values()) reject(err);
      pending.clear();
    });
  }
  // Kept alive only while it has work: the benchmark ends when its own work does.
  thread.ref();
  const job = ++nextJob;
  return new Promise((resolve, reject) => {
    pending.set(job, { resolve, reject, counter });
    thread.postMessage({ job, url, scenario, seconds, connections, start: counter.n });
  });
}

if (!isMainThread) {
  const scenarios = scenarioList(workerData);
  parentPort.on('message', async ({ job, url, scenario: name, seconds, connections, start }) => {
    try {
      const scenario = scenarios.find((s) => s.name === name);
      let n = start;
      const options = { url, connections, duration: seconds };
      // In a thread autocannon leaves its histograms raw (for its own multi-worker mode): aggregate.
      const raw = await autocannon({
        ...options,
        requests: [
          {
            setupRequest: (req) => {
              const r = scenario.request(n++);
              return { ...req, method: r.method, path: r.path, headers: r.headers, body: r.body };
            },
          },
        ],
      });
      const result = raw.latency === undefined ? autocannon.aggregateResult([raw], options) : raw;
      parentPort.postMessage({
        job,
        next: n,
        result: {
          // Completed requests over the run: autocannon's per-second average is too coarse for ratios.
          rps: result.requests.total / seconds,
          requests: result.requests.total,
          p50: result.latency.p50,
          p99: result.latency.p99,
          max: result.latency.max,
          errors: result.errors + result.timeouts,
          statuses: { '2xx': result['2xx'], '4xx': result['4xx'], '5xx': result['5xx'] },
        },
      });
    } catch (err) {
      parentPort.postMessage({ job, error: String(err?.stack ?? err) });
    }
  });
}
