// The hostile-load scenario of `npm run bench` (`--only hostile`): one application does what it can
// to load the service (20 webhooks of which 3 never answer, batches of 100 events, loops of test
// events, recoveries and resends) while a well-behaved application publishes one event at a time.
// Reported: every well-behaved publish answered (within 30 s), its p50 and p95, and the sockets
// left in CLOSE-WAIT at the end on the worker's and the receiver's ports (/proc/net/tcp and tcp6,
// state 08). Targets: every publish answered, p95 under 2 s, no socket in CLOSE-WAIT.
//   --hostile-webhooks N (20)  --hostile-never N (3)  --hostile-batches N (3)  --hostile-loops N (4)
//   --hostile-publishes N (120)  --hostile-unlimited (no rate limits: a diagnostic)
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { addWebhooks, option, SERVICE_OBJECTS, secretOf, sleep, startWorker, tokenFor } from './harness.mjs';
import { EVENT_PATH, EVENTS_PATH, nftData, PATH } from './scenarios.mjs';

export const HOSTILE = 'hostile load';
export const HOSTILE_TARGET = { p95Ms: 2000, closeWait: 0 };

const WEBHOOKS = option('--hostile-webhooks', 20);
const NEVER = option('--hostile-never', 3);
const BATCHES = option('--hostile-batches', 3);
const PUBLISHES = option('--hostile-publishes', 120);
const UNLIMITED = process.argv.includes('--hostile-unlimited');
/** A well-behaved publish without an answer this long is unanswered. */
const ANSWER_MS = 30_000;
/** Hostile requests open at once per loop kind (test events, recoveries, resends). */
const LOOPS = option('--hostile-loops', 4);
const CALM_FIRST = 1001;
const CALM_WEBHOOKS = 2;

const quantile = (xs, q) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
};

/** A receiver: `/ok/<id>` answers 204 at once; `/never/<id>` reads the request and never answers. */
async function startHostileReceiver() {
  const counts = { ok: 0, never: 0 };
  const server = createServer((req, res) => {
    const never = req.url.startsWith('/never/');
    req.resume();
    req.on('end', () => {
      counts[never ? 'never' : 'ok']++;
      if (!never) res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    port: server.address().port,
    counts,
    close: () =>
      new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      }),
  };
}

/** Sockets in CLOSE-WAIT (state 08) whose local or remote port is one of `ports` (Linux only). */
export function closeWaitSockets(ports) {
  let count = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const [, local, remote, state] = line.trim().split(/\s+/);
      if (state !== '08') continue;
      const port = (address) => Number.parseInt(address.split(':').at(-1), 16);
      if (ports.includes(port(local)) || ports.includes(port(remote))) count++;
    }
  }
  return count;
}

/** POST/GET with a bound; resolves with {status, body} or {error}. */
async function call(url, { method = 'POST', token, body, timeoutMs = ANSWER_MS }) {
  try {
    const res = await fetch(url, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: res.status, body: await res.text() };
  } catch (err) {
    return { error: err.name };
  }
}

/**
 * Runs the scenario once against the production bundle at `bundleUrl`; returns its figures.
 * `log` prints a line.
 */
export async function runHostile({ bundleUrl, log }) {
  const receiver = await startHostileReceiver();
  const worker = await startWorker({
    scriptPath: bundleUrl.href,
    durableObjects: SERVICE_OBJECTS,
    apps: 0,
    perApp: 0,
    bindings: { WEBHOOK_URL_ALLOWED_ORIGINS: receiver.origin },
    // The limits every application meets (wrangler.toml): a hostile one is held to them as in
    // production. --hostile-unlimited: none (diagnostic: the service's own cost of unlimited abuse).
    configuredLimits: !UNLIMITED,
    limiters: !UNLIMITED,
  });
  const workerPort = Number(new URL(worker.url).port);
  try {
    await addWebhooks(worker.db, {
      app: 'hostile',
      firstId: 1,
      count: WEBHOOKS,
      url: (id) => `${receiver.origin}/${id <= NEVER ? 'never' : 'ok'}/${id}`,
      secret: secretOf,
    });
    await addWebhooks(worker.db, {
      app: 'calm',
      firstId: CALM_FIRST,
      count: CALM_WEBHOOKS,
      url: (id) => `${receiver.origin}/ok/${id}`,
      secret: secretOf,
    });
    const platform = await tokenFor('platform-service', { scope: 'events:publish' });
    const hostile = await tokenFor('hostile');
    const at = (path) => worker.url + path;
    // Warm-up: the isolate compiled, the well-behaved application's objects made.
    await call(at(EVENT_PATH), { token: platform, body: { app_id: 'calm', type: 'NEW_NFT', data: nftData(0) } });

    let stop = false;
    const hostileStats = { requests: 0, unanswered: 0, statuses: {} };
    const note = (kind) => (r) => {
      hostileStats.requests++;
      if (r.error !== undefined) hostileStats.unanswered++;
      const outcome = `${kind} ${r.error ?? r.status}`;
      hostileStats.statuses[outcome] = (hostileStats.statuses[outcome] ?? 0) + 1;
    };
    const webhook = (n) => 1 + (n % WEBHOOKS);
    const loop = async (kind, request) => {
      for (let n = 0; !stop; n++) note(kind)(await request(n));
    };
    const batches = Array.from({ length: BATCHES }, (_, b) =>
      call(at(EVENTS_PATH), {
        token: platform,
        body: {
          events: Array.from({ length: 100 }, (_, k) => ({
            app_id: 'hostile',
            type: 'NEW_NFT',
            id: `hostile-${b}-${k}`,
            data: nftData(b * 100 + k),
          })),
        },
      }).then(note('batch')),
    );
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const resend = async (n) => {
      const log = await call(at(`${PATH}/delivery?webhook_id=${webhook(n)}&limit=5`), {
        method: 'GET',
        token: hostile,
      });
      const id = log.status === 200 ? /"delivery_id":"?(\d+)/.exec(log.body)?.[1] : undefined;
      if (id === undefined) return log;
      return call(at(`${PATH}/delivery/resend`), { token: hostile, body: { delivery_id: id } });
    };
    const loops = Array.from({ length: LOOPS }, (_, i) => [
      loop('test', (n) => call(at(`${PATH}/test`), { token: hostile, body: { webhook_id: webhook(n * LOOPS + i) } })),
      loop('recover', (n) =>
        call(at(`${PATH}/recover`), { token: hostile, body: { webhook_id: webhook(n * LOOPS + i), since } }),
      ),
      loop('resend', (n) => resend(n * LOOPS + i)),
    ]).flat();

    // The well-behaved application: one publish at a time, each bounded by ANSWER_MS.
    await sleep(1000);
    const answered = [];
    let unanswered = 0;
    const failures = {};
    const started = performance.now();
    for (let n = 1; n <= PUBLISHES; n++) {
      const t = performance.now();
      const r = await call(at(EVENT_PATH), {
        token: platform,
        body: { app_id: 'calm', type: 'NEW_NFT', data: nftData(n) },
      });
      if (r.status === 202) answered.push(performance.now() - t);
      else {
        unanswered++;
        const why = r.error ?? `${r.status} ${r.body.slice(0, 80)}`;
        failures[why] = (failures[why] ?? 0) + 1;
      }
    }
    const seconds = (performance.now() - started) / 1000;
    stop = true;
    await Promise.all([...batches, ...loops]);
    // What is left open once the load has stopped: in flight attempts end within the timeout.
    const closeWaitAtEnd = closeWaitSockets([workerPort, receiver.port]);
    const figures = {
      limits: UNLIMITED ? 'none' : 'wrangler.toml',
      webhooks: WEBHOOKS,
      never_answering: NEVER,
      batches: BATCHES,
      publishes: PUBLISHES,
      answered: answered.length,
      unanswered,
      failures,
      p50_ms: answered.length === 0 ? null : Math.round(quantile(answered, 0.5)),
      p95_ms: answered.length === 0 ? null : Math.round(quantile(answered, 0.95)),
      max_ms: answered.length === 0 ? null : Math.round(Math.max(...answered)),
      seconds: Math.round(seconds),
      hostile: hostileStats,
      receiver: { ...receiver.counts },
      close_wait: closeWaitAtEnd,
    };
    log(
      `${HOSTILE}: ${figures.answered}/${PUBLISHES} well-behaved publishes answered, p50 ${figures.p50_ms} ms, ` +
        `p95 ${figures.p95_ms} ms, max ${figures.max_ms} ms${unanswered > 0 ? ` (${JSON.stringify(failures)})` : ''}; CLOSE-WAIT ${closeWaitAtEnd}; hostile requests ` +
        `${hostileStats.requests} (${hostileStats.unanswered} unanswered, ${JSON.stringify(hostileStats.statuses)}); ` +
        `receiver ok ${receiver.counts.ok}, never ${receiver.counts.never}`,
    );
    return figures;
  } finally {
    await worker.dispose();
    await receiver.close();
  }
}
