// The load generator: autocannon in a thread of its own, so that the benchmark's main thread,
// which also reads the workers' output (their log lines), never takes its time. Run as a module
// it is the thread; imported, `load` starts one.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';
import { scenarioList } from './scenarios.mjs';

/**
 * Drives `url` with the named scenario's requests for `seconds` over `connections` keep-alive
 * connections, numbering requests from `counter.n` (advanced, so ids meant to exist are never
 * reused across slices).
 */
export function load({ url, scenario, seconds, connections, counter, tokens, newApps }) {
  return new Promise((resolve, reject) => {
    const thread = new Worker(new URL(import.meta.url), {
      workerData: { url, scenario, seconds, connections, start: counter.n, tokens, newApps },
    });
    thread.once('message', ({ result, next }) => {
      counter.n = next;
      resolve(result);
    });
    thread.once('error', reject);
  });
}

if (!isMainThread) {
  const { url, scenario: name, seconds, connections, start, tokens, newApps } = workerData;
  const scenario = scenarioList({ tokens, newApps }).find((s) => s.name === name);
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
    next: n,
    result: {
      // Completed requests over the run: autocannon's per-second average is too coarse for ratios.
      rps: result.requests.total / seconds,
      p50: result.latency.p50,
      p99: result.latency.p99,
      max: result.latency.max,
      errors: result.errors + result.timeouts,
      statuses: { '2xx': result['2xx'], '4xx': result['4xx'], '5xx': result['5xx'] },
    },
  });
}
