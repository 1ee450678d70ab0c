// Rows written per event, for `npm run bench`: events published alone (one POST each, with an
// `id`, one after another) to one application with two webhooks at the receiver, each delivered at
// the first attempt (204); then the SQLite rows the objects wrote, summed over every statement's
// cursor (`rowsWritten`) of the application's object and both endpoints' objects, with the alarms
// set or deleted beside them (a row written each, by Cloudflare's rule, which no cursor shows).
// Counted after a warm-up (the objects made, their schema and first rows written) and once the
// objects are quiet again (the application's alarm, 5 s after a publish, has rung). Two figures:
// `stream`, events published back to back (the alarms of one pass or one handover serve several),
// and `isolated`, each event alone in its objects' time (every alarm written for it alone).
// The service and the floor (bench/floor-objects.ts) alike: both wrapped by the same counter
// (bench/harness.mjs, COUNTING).
import { countsOf, startDeliveryWorker } from './deliveries.mjs';
import { addWebhooks, callJson, secretOf, sleep } from './harness.mjs';
import { EVENT_PATH, nftData } from './scenarios.mjs';

export const ROWS = 'rows written per event';
const FIRST = 601;
const WEBHOOKS = 2;
const APP = 'rows';
/** Long enough for the application's alarm (5 s after a publish) to have rung. */
const QUIET_MS = 6500;

async function publishOne(worker, token, id) {
  const body = { app_id: APP, type: 'NEW_NFT', id, data: nftData(id.length) };
  const { status, text } = await callJson('POST', worker.url + EVENT_PATH, token, body);
  if (status !== 202) throw new Error(`${ROWS}: publish answered ${status} ${text.slice(0, 200)}`);
}

/** Every object's rows and alarms so far, summed by kind. */
async function counted(worker, hooks) {
  const { endpoints, apps } = await worker.tool('/rows', { webhookIds: hooks, apps: [APP] });
  const sum = (list, k) => list.reduce((t, o) => t + o[k], 0);
  return {
    application: sum(apps, 'rows'),
    application_alarms: sum(apps, 'alarms'),
    endpoints: sum(endpoints, 'rows'),
    endpoint_alarms: sum(endpoints, 'alarms'),
  };
}

const minus = (a, b, n) => Object.fromEntries(Object.keys(a).map((k) => [k, (a[k] - b[k]) / n]));

/** Publishes `events` (ids `tag`-n), `gapMs` apart, waits until all are delivered and the objects are quiet. */
async function publishAndSettle(worker, receiver, token, hooks, tag, events, gapMs) {
  const before = await countsOf(worker, hooks);
  const isMine = (a) => hooks.some((h) => a.path === `/hook/${h}`);
  receiver.reset();
  const waiting = receiver.waitFor(events * WEBHOOKS, 120_000, `${ROWS} (${worker.name})`, isMine);
  for (let i = 0; i < events; i++) {
    await publishOne(worker, token, `${tag}-${i}`);
    if (gapMs > 0) await sleep(gapMs);
  }
  await waiting;
  for (;;) {
    const counts = await countsOf(worker, hooks);
    if (counts.pending === 0 && counts.succeeded - before.succeeded === events * WEBHOOKS) break;
    await sleep(100);
  }
  await sleep(QUIET_MS);
}

async function measure({ name, start, receiver, token, events, isolated, log }) {
  const worker = await start();
  worker.name = name;
  try {
    await addWebhooks(worker.db, {
      app: APP,
      firstId: FIRST,
      count: WEBHOOKS,
      url: (id) => `${receiver.origin}/hook/${id}`,
      secret: secretOf,
    });
    const hooks = [String(FIRST), String(FIRST + 1)];
    await publishAndSettle(worker, receiver, token, hooks, 'warm', 5, 0);
    const start0 = await counted(worker, hooks);
    await publishAndSettle(worker, receiver, token, hooks, 'stream', events, 0);
    const start1 = await counted(worker, hooks);
    await publishAndSettle(worker, receiver, token, hooks, 'alone', isolated, QUIET_MS);
    const start2 = await counted(worker, hooks);
    const figure = (per) => ({
      ...per,
      total: per.application + per.application_alarms + per.endpoints + per.endpoint_alarms,
    });
    const out = { stream: figure(minus(start1, start0, events)), isolated: figure(minus(start2, start1, isolated)) };
    const line = (f) =>
      `${f.total.toFixed(1)} (application ${f.application.toFixed(1)} + alarms ${f.application_alarms.toFixed(1)}, ` +
      `endpoints ${f.endpoints.toFixed(1)} + alarms ${f.endpoint_alarms.toFixed(1)})`;
    log(`${ROWS} (${name}): back to back ${line(out.stream)}; each alone ${line(out.isolated)}`);
    return out;
  } finally {
    await worker.dispose();
  }
}

/** Rows written per event by the service and by the floor. */
export async function measureRows({
  receiver,
  token,
  events,
  isolated,
  bundleUrl,
  floorScript,
  serviceObjects,
  floorObjects,
  log,
}) {
  const common = { receiver, token, events, isolated, log };
  return {
    service: await measure({
      ...common,
      name: 'service',
      start: () =>
        startDeliveryWorker({ scriptPath: bundleUrl.href, durableObjects: serviceObjects, receiver, countRows: true }),
    }),
    floor: await measure({
      ...common,
      name: 'floor',
      start: () =>
        startDeliveryWorker({ script: floorScript, durableObjects: floorObjects, receiver, countRows: true }),
    }),
  };
}
