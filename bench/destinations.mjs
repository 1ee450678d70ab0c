// The destinations scenario of `npm run bench` (`--only destinations`): deliveries per second to
// each destination type against an HTTP endpoint, through the production bundle. One application
// per type with one webhook (so no host or queue is shared: the endpoint's own engine is what is
// measured), every type's API played by one stand-in in this process that answers as the real API
// answers a success (the operator's DESTINATION_API_BASES points every type at it), and the HTTP
// webhook answered 204 by the same server. Each round publishes --destination-events events (1,000)
// to each application in turn, HTTP first and last (ABBA), timed from the first publish until the
// stand-in has every one; nothing may be lost or arrive twice. Reported: each type's deliveries/s
// and its ratio to HTTP's (median of the rounds); target ≥ 0.8x.
//   --destination-events N (1000)  --destination-rounds N (3)
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { callJson, median, option, SERVICE_OBJECTS, startWorker, tokenFor } from './harness.mjs';
import { EVENTS_PATH, nftData, PATH } from './scenarios.mjs';

export const DESTINATIONS = 'destinations: deliveries/s by type against HTTP';
export const DESTINATIONS_TARGET = 0.8;

const EVENTS = option('--destination-events', 1000);
const ROUNDS = option('--destination-rounds', 3);
const TYPES = ['http', 'cloudflare_queue', 'aws_sqs', 'aws_eventbridge', 'gcp_pubsub'];
const KEY_ID = 'AKIDEXAMPLEBENCH0001';
const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYBENCHKEY01';

/**
 * The stand-in: which type each request is for (by path and X-Amz-Target), answered as that API
 * answers a success; `webhook-id` (SQS and Pub/Sub: in the message's attributes; the others: the
 * body's message_id) noted per type, so a loss or a double shows.
 */
async function startStandIn() {
  const seen = new Map(TYPES.map((t) => [t, new Map()]));
  let waiter = null;
  const note = (type, id) => {
    const ids = seen.get(type);
    ids.set(id, (ids.get(id) ?? 0) + 1);
    if (waiter !== null && ids.size >= waiter.count && waiter.type === type) waiter.resolve();
  };
  const json = (res, body) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const target = req.headers['x-amz-target'];
      if (req.url?.startsWith('/hook/')) {
        note('http', String(req.headers['webhook-id']));
        res.writeHead(204).end();
      } else if (target === 'AmazonSQS.SendMessage') {
        const body = JSON.parse(text);
        note('aws_sqs', body.MessageAttributes['webhook-id'].StringValue);
        json(res, { MD5OfMessageBody: '0', MessageId: 'bench' });
      } else if (target === 'AWSEvents.PutEvents') {
        const entry = JSON.parse(text).Entries[0];
        note('aws_eventbridge', JSON.parse(entry.Detail).message_id);
        json(res, { FailedEntryCount: 0, Entries: [{ EventId: 'bench' }] });
      } else if (req.url?.startsWith('/client/v4/accounts/')) {
        note('cloudflare_queue', JSON.parse(text).body.message_id);
        json(res, { success: true, errors: [], messages: [], result: null });
      } else if (req.url === '/token') {
        json(res, { access_token: 'bench-token', expires_in: 3600, token_type: 'Bearer' });
      } else if (req.url?.includes(':publish')) {
        note('gcp_pubsub', JSON.parse(text).messages[0].attributes['webhook-id']);
        json(res, { messageIds: ['1'] });
      } else {
        res.writeHead(404).end();
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    origin,
    /** Resolves once `type` has `count` distinct messages (at most `ms`). */
    waitFor(type, count, ms = 120_000) {
      if (seen.get(type).size >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${DESTINATIONS}: ${type} got ${seen.get(type).size} of ${count}`)),
          ms,
        );
        waiter = {
          type,
          count,
          resolve: () => {
            clearTimeout(timer);
            waiter = null;
            resolve();
          },
        };
      });
    },
    /** Forgets what arrived; how many of `type` arrived more than once since the last reset. */
    reset(type) {
      const doubled = [...seen.get(type).values()].filter((n) => n > 1).length;
      seen.get(type).clear();
      return doubled;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Each type's destination, one queue (bus, topic) per application. */
function destinationOf(type, n, serviceAccountKey) {
  switch (type) {
    case 'cloudflare_queue':
      return { type, account_id: 'a'.repeat(32), queue_id: n.toString(16).padStart(32, '0'), api_token: 'cf-bench' };
    case 'aws_sqs':
      return {
        type,
        queue_url: `https://sqs.eu-west-1.amazonaws.com/123456789012/bench-${n}`,
        access_key_id: KEY_ID,
        secret_access_key: SECRET_KEY,
      };
    case 'aws_eventbridge':
      return {
        type,
        region: 'us-east-1',
        event_bus: `bench-${n}`,
        source: 'com.example.bench',
        access_key_id: KEY_ID,
        secret_access_key: SECRET_KEY,
      };
    case 'gcp_pubsub':
      return { type, topic: `projects/bench-project/topics/bench-${n}`, service_account_key: serviceAccountKey };
    default:
      return undefined;
  }
}

/** Runs the scenario against the production bundle at `bundleUrl`; returns each type's figures. */
export async function runDestinations({ bundleUrl, log }) {
  const standIn = await startStandIn();
  const base = standIn.origin;
  const bases = ['cloudflare_queue', 'aws_sqs', 'aws_eventbridge', 'gcp_pubsub', 'gcp_oauth']
    .map((t) => `${t}=${base}`)
    .join(' ');
  const worker = await startWorker({
    scriptPath: bundleUrl.href,
    durableObjects: SERVICE_OBJECTS,
    apps: 0,
    perApp: 0,
    bindings: { DESTINATION_API_BASES: bases, WEBHOOK_URL_ALLOWED_ORIGINS: base, ENDPOINT_RATE_LIMIT: '1000' },
  });
  try {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const serviceAccountKey = {
      type: 'service_account',
      client_email: 'bench@bench-project.iam.gserviceaccount.com',
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
      token_uri: 'https://oauth2.googleapis.com/token',
    };
    const platform = await tokenFor('platform-service', { scope: 'events:publish' });
    for (const [n, type] of TYPES.entries()) {
      const app = `dest-${type}`;
      const body =
        type === 'http'
          ? { url: `${base}/hook/${type}` }
          : { destination: destinationOf(type, n + 1, serviceAccountKey) };
      const made = await callJson('POST', worker.url + PATH, await tokenFor(app), body);
      if (made.status !== 201) throw new Error(`${DESTINATIONS}: registering ${type}: ${made.status} ${made.text}`);
    }
    let sequence = 0;
    /** Publishes `count` events to `type`'s application (batches of 100, two at once) and times their arrival. */
    const measure = async (type, count) => {
      standIn.reset(type);
      const started = performance.now();
      const batches = [];
      for (let i = 0; i < count; i += 100) {
        const events = Array.from({ length: Math.min(100, count - i) }, () => ({
          app_id: `dest-${type}`,
          type: 'NEW_NFT',
          id: `dest-${sequence}`,
          data: nftData(sequence++),
        }));
        batches.push(events);
      }
      for (let i = 0; i < batches.length; i += 2) {
        const sent = await Promise.all(
          batches.slice(i, i + 2).map((events) => callJson('POST', worker.url + EVENTS_PATH, platform, { events })),
        );
        for (const r of sent) if (r.status !== 202) throw new Error(`${DESTINATIONS}: publish ${r.status} ${r.text}`);
      }
      await standIn.waitFor(type, count);
      const seconds = (performance.now() - started) / 1000;
      // Any late double of this slice shows at the next reset of the type; count this one's now.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const doubled = standIn.reset(type);
      if (doubled > 0) throw new Error(`${DESTINATIONS}: ${type}: ${doubled} messages arrived twice`);
      return count / seconds;
    };
    // Warm-up: each type's first token, first signing key, first object.
    for (const type of TYPES) await measure(type, 20);
    const rates = new Map(TYPES.map((t) => [t, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = ['http', ...TYPES.slice(1), 'http'];
      const got = new Map();
      for (const type of order) {
        const rate = await measure(type, EVENTS);
        got.set(type, [...(got.get(type) ?? []), rate]);
      }
      for (const [type, values] of got) rates.get(type).push(values.reduce((a, b) => a + b, 0) / values.length);
      log?.(
        `run ${round + 1} ${DESTINATIONS}: ${TYPES.map((t) => `${t} ${Math.round(got.get(t).at(-1))}/s`).join(', ')}`,
      );
    }
    const http = median(rates.get('http'));
    return TYPES.map((type) => {
      const perRound = rates.get(type).map((r, i) => r / rates.get('http')[i]);
      return { type, rate: median(rates.get(type)), ratio: type === 'http' ? 1 : median(perRound), http };
    });
  } finally {
    await worker.dispose?.();
    await standIn.close();
  }
}
