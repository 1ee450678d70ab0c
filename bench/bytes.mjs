// Bytes per event, for `npm run bench`: `events` events (batches of 100) published to one
// application with two webhooks at the receiver, every delivery sent and recorded; then the size
// of the application's object, of the endpoints' objects and the growth of D1. Each worker runs
// with its storage persisted to a temporary directory; once it is disposed, each object's SQLite
// file is read with the sqlite3 command-line tool (page_count x page_size, which is what
// ctx.storage.sql.databaseSize reports). The floor's objects also answer databaseSize itself,
// through the tool worker, as a check of the files' figure. D1's size is its `meta.size_after`.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countsOf, publishMany, startDeliveryWorker } from './deliveries.mjs';
import { addWebhooks, secretOf, sleep } from './harness.mjs';

export const BYTES = 'bytes per event';
const FIRST = 401;
const WEBHOOKS = 2;

/** page_count x page_size of a SQLite file (sqlite3 CLI), and its bytes on disk. */
function sqliteSize(file) {
  const run = spawnSync('sqlite3', [file, 'PRAGMA page_count;', 'PRAGMA page_size;', 'PRAGMA freelist_count;'], {
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`sqlite3 ${file}: ${run.stderr}`);
  const [pages, pageSize, free] = run.stdout.trim().split('\n').map(Number);
  return { bytes: pages * pageSize, free_bytes: free * pageSize };
}

/**
 * An application object's size beyond the deduplication window: a copy of its file with what its
 * alarm deletes once the window has passed (the events kept by source key) deleted, then vacuumed
 * (so only the pages still in use count). An object without that table (the floor's, which has
 * no window, or one that never published) keeps all it has.
 */
function beyondWindow(file) {
  const copy = `${file}.beyond`;
  copyFileSync(file, copy);
  try {
    const has = spawnSync('sqlite3', [copy, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'dedupe';"], {
      encoding: 'utf8',
    });
    if (has.stdout.trim() !== '1') return sqliteSize(file).bytes;
    const run = spawnSync('sqlite3', [copy, 'DELETE FROM dedupe;', 'VACUUM;'], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`sqlite3 ${copy}: ${run.stderr}`);
    return sqliteSize(copy).bytes;
  } finally {
    rmSync(copy, { force: true });
  }
}

/** Every object's SQLite file under a persisted Durable Objects directory, by class. */
function objectFiles(dir) {
  const out = {};
  for (const sub of readdirSync(dir)) {
    const files = readdirSync(join(dir, sub)).filter((f) => f.endsWith('.sqlite'));
    out[sub] = files.map((f) => ({
      ...sqliteSize(join(dir, sub, f)),
      ...(sub.includes('Application') ? { beyond_window_bytes: beyondWindow(join(dir, sub, f)) } : {}),
    }));
  }
  return out;
}

const d1Size = async (db) => (await db.prepare('SELECT 1').run()).meta.size_after;

/** One worker's figures. */
async function measure({ name, start, receiver, token, events, log }) {
  const dir = mkdtempSync(join(tmpdir(), `bench-bytes-${name}-`));
  try {
    const worker = await start(dir);
    worker.name = name;
    await addWebhooks(worker.db, {
      app: 'bytes',
      firstId: FIRST,
      count: WEBHOOKS,
      url: (id) => `${receiver.origin}/hook/${id}`,
      secret: secretOf,
    });
    const hooks = [String(FIRST), String(FIRST + 1)];
    const d1Before = await d1Size(worker.db);
    receiver.reset();
    const started = performance.now();
    await publishMany(worker, token, 'bytes', 'bytes', events, 2);
    const publishedMs = performance.now() - started;
    const isMine = (a) => a.path === `/hook/${FIRST}` || a.path === `/hook/${FIRST + 1}`;
    await receiver.waitFor(events * WEBHOOKS, 600_000, `${BYTES} (${name})`, isMine);
    let counts;
    for (;;) {
      counts = await countsOf(worker, hooks);
      if (counts.pending === 0) break;
      await sleep(100);
    }
    const deliveredMs = performance.now() - started;
    const d1After = await d1Size(worker.db);
    const reported = name === 'floor' ? await worker.tool('/size', { webhookIds: hooks, apps: ['bytes'] }) : null;
    await worker.dispose();
    const files = objectFiles(join(dir, 'do'));
    const sum = (match) =>
      Object.entries(files)
        .filter(([sub]) => sub.includes(match))
        .flatMap(([, list]) => list)
        .reduce((t, f) => t + f.bytes, 0);
    const application = sum('Application');
    const endpoints = sum('Endpoint');
    // Free pages (rows deleted since: the service's outbox) are reused by later writes.
    const free = (match) =>
      Object.entries(files)
        .filter(([sub]) => sub.includes(match))
        .flatMap(([, list]) => list)
        .reduce((t, f) => t + f.free_bytes, 0);
    const beyond = Object.entries(files)
      .filter(([sub]) => sub.includes('Application'))
      .flatMap(([, list]) => list)
      .map((f) => f.beyond_window_bytes);
    const beyondBytes = beyond.reduce((t, b) => t + b, 0);
    const out = {
      events,
      application_beyond_window_bytes: beyondBytes,
      application_beyond_window_bytes_per_event: beyondBytes / events,
      deliveries: events * WEBHOOKS,
      succeeded: counts.succeeded,
      published_ms: Math.round(publishedMs),
      delivered_ms: Math.round(deliveredMs),
      application_bytes: application,
      endpoints_bytes: endpoints,
      application_bytes_per_event: application / events,
      endpoints_bytes_per_event: endpoints / events,
      objects_bytes_per_event: (application + endpoints) / events,
      application_live_bytes_per_event: (application - free('Application')) / events,
      endpoints_live_bytes_per_event: (endpoints - free('Endpoint')) / events,
      d1_growth_bytes: d1After - d1Before,
      d1_before_bytes: d1Before,
      files,
      database_size_reported: reported,
    };
    log(
      `${BYTES} (${name}): application ${(application / events).toFixed(0)} B/event ` +
        `(${out.application_live_bytes_per_event.toFixed(0)} without free pages` +
        `; ${beyondBytes} bytes in all beyond the deduplication window, ${(beyondBytes / events).toFixed(1)} B/event` +
        `), endpoints ${(endpoints / events).toFixed(0)} B/event ` +
        `(${WEBHOOKS} deliveries each), D1 +${out.d1_growth_bytes} bytes; delivered in ${(deliveredMs / 1000).toFixed(1)} s`,
    );
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Bytes per event of the service and of the floor. */
export async function measureBytes({
  receiver,
  token,
  events,
  bundleUrl,
  floorScript,
  serviceObjects,
  floorObjects,
  log,
}) {
  const out = {};
  out.service = await measure({
    name: 'service',
    receiver,
    token,
    events,
    log,
    start: (persist) =>
      startDeliveryWorker({ scriptPath: bundleUrl.href, durableObjects: serviceObjects, receiver, persist }),
  });
  out.floor = await measure({
    name: 'floor',
    receiver,
    token,
    events,
    log,
    start: (persist) => startDeliveryWorker({ script: floorScript, durableObjects: floorObjects, receiver, persist }),
  });
  return out;
}
