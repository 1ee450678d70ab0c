// Runs Workers in workerd through miniflare for the load and benchmark scripts: the production
// bundle (as `wrangler deploy` would upload it) or a reference worker, each with a local D1 that
// has the real schema and seeded webhooks.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { Miniflare } from 'miniflare';
import { unstable_readConfig, unstable_splitSqlQuery } from 'wrangler';

const root = new URL('..', import.meta.url);
export const BUNDLE_DIR = new URL('../dist/', import.meta.url);

import {
  DELIVERY_LOG_FIRST_ID,
  DELIVERY_LOG_PER_WEBHOOK,
  DELIVERY_LOG_WEBHOOKS,
  FILTER_APP,
  FILTER_SET_PER_CALL,
  FILTER_SET_SIZE,
  FILTER_WEBHOOKS,
  filterOf,
  nftData,
  PATH,
  PUBLISH_APPS,
  PUBLISH_EVENT_TYPES,
  PUBLISH_FIRST_ID,
  setAddress,
} from './scenarios.mjs';

export { ownerOf, PATH } from './scenarios.mjs';

/** Waits `ms` milliseconds. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The median of `xs`: of an even count, the upper of the two middle values. */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A numeric command-line option (`--name N`) of the running script. */
export const option = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};

/** Builds the production bundle into dist/ with wrangler, as a deploy would (of `dir`: the repository by default). */
export function buildBundle(dir = root) {
  const run = spawnSync('npx', ['--no-install', 'wrangler', 'deploy', '--dry-run', '--outdir', 'dist'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
  });
  if (run.status !== 0) throw new Error(`wrangler deploy --dry-run failed:\n${run.stdout}\n${run.stderr}`);
  return new URL('dist/index.js', dir);
}

/**
 * Builds the production bundle of git revision `rev` (the release before, for `--baseline`): its
 * tree into a temporary directory (`git archive | tar -x`), this repository's node_modules linked
 * in, and its own `wrangler deploy --dry-run`, as its deploy did. Returns the bundle's URL.
 */
export function buildRevisionBundle(rev) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-baseline-'));
  // Removed when the process exits (the link to node_modules is removed, not followed).
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const archive = spawnSync('sh', ['-c', 'git archive "$1" | tar -x -C "$2"', 'sh', rev, dir], {
    cwd: root,
    encoding: 'utf8',
  });
  if (archive.status !== 0) throw new Error(`git archive ${rev} failed:\n${archive.stderr}`);
  symlinkSync(new URL('node_modules', root).pathname, join(dir, 'node_modules'), 'dir');
  return buildBundle(new URL(`file://${dir}/`));
}

const config = unstable_readConfig({ config: new URL('wrangler.toml', root).pathname });
// The database is made by the migrations, in order, then the post-deploy ones, as `npm start` and a
// deploy make theirs.
const sqlFiles = (folder) =>
  existsSync(folder)
    ? readdirSync(folder)
        .filter((f) => f.endsWith('.sql'))
        .sort()
    : [];
const sqlOf = (folder, files = sqlFiles(folder)) =>
  files.flatMap((f) => unstable_splitSqlQuery(readFileSync(new URL(f, folder), 'utf8')));
const migrations = new URL('migrations/', root);
const postDeploy = new URL('post-deploy/', migrations);
const schema = [...sqlOf(migrations), ...sqlOf(postDeploy)];

/**
 * How the bundle of a revision built by buildRevisionBundle is configured, from that revision's own
 * wrangler.toml: its Durable Objects (as Miniflare binds them), its queue producers (each bound to
 * a queue of the bench's without a consumer: what is sent there is accepted and dropped), and the
 * database it runs on: today's migrations (they only expand, so older code reads them) and, of the
 * post-deploy ones, which contract, only those the revision itself has (6569f6d still reads the
 * D1 tables that post-deploy/0001 drops).
 */
export function revisionConfig(bundleUrl) {
  const dir = new URL('..', bundleUrl);
  const own = unstable_readConfig({ config: new URL('wrangler.toml', dir).pathname });
  const sqlite = new Set((own.migrations ?? []).flatMap((m) => m.new_sqlite_classes ?? []));
  const durableObjects = Object.fromEntries(
    (own.durable_objects?.bindings ?? []).map(({ name, class_name }) => [
      name,
      { className: class_name, useSQLite: sqlite.has(class_name) },
    ]),
  );
  const queueProducers = Object.fromEntries(
    (own.queues?.producers ?? []).map(({ binding, queue }) => [binding, `bench-baseline-${queue}`]),
  );
  const itsPostDeploy = new Set(sqlFiles(new URL('migrations/post-deploy/', dir)));
  return {
    durableObjects,
    queueProducers,
    schema: [
      ...sqlOf(migrations),
      ...sqlOf(
        postDeploy,
        sqlFiles(postDeploy).filter((f) => itsPostDeploy.has(f)),
      ),
    ],
  };
}
export const SECRET = randomBytes(32).toString('base64url');
/** The service's Durable Objects (wrangler.toml), as Miniflare binds them. */
export const SERVICE_OBJECTS = {
  ENDPOINTS: { className: 'Endpoint', useSQLite: true },
  APPLICATIONS: { className: 'Application', useSQLite: true },
};
/** The floor's Durable Objects (bench/floor-objects.ts): the same engine, its own classes. */
export const FLOOR_OBJECTS = {
  FLOOR_ENDPOINTS: { className: 'FloorEndpoint', useSQLite: true },
  FLOOR_APPLICATIONS: { className: 'FloorApplication', useSQLite: true },
};

/**
 * The bench's tool: a second Worker in the same Miniflare whose ENDPOINTS binding reaches the
 * worker under test's endpoint objects (the service's Endpoint, or the floor's FloorEndpoint) by
 * RPC, never through the worker under test: POST /seed {webhookId, deliveries, attempts} seeds
 * one (the service's Endpoint gets that method from seedingEntry, the floor's has its own); POST /stats {webhookIds, since} sums their deliveries' counters; POST /size {webhookIds,
 * apps} (floor only) sums ctx.storage.sql.databaseSize; POST /rows {webhookIds, apps} (workers
 * started with countRows) answers each object's rows written so far (COUNTING); POST /call
 * {webhookId, method} calls one of the methods a measurement adds to the service's Endpoint
 * (startWorker's endpointMethods).
 */
const TOOL_SCRIPT = `export default { async fetch(request, env) {
  const path = new URL(request.url).pathname;
  const body = await request.json();
  if (path === '/seed') {
    await env.ENDPOINTS.getByName(body.webhookId).seed(body.webhookId, body.deliveries, body.attempts);
    return new Response('{}');
  }
  if (path === '/stats') {
    const sums = { pending: 0, succeeded: 0, failed: 0, cancelled: 0, attempts: 0 };
    await Promise.all(body.webhookIds.map(async (id) => {
      for (const row of await env.ENDPOINTS.getByName(id).stats(body.since)) {
        for (const k of Object.keys(sums)) sums[k] += Number(row[k] ?? 0);
      }
    }));
    return Response.json(sums);
  }
  if (path === '/rows') {
    const endpoints = await Promise.all(body.webhookIds.map((id) => env.ENDPOINTS.getByName(id).rowsWritten()));
    const apps = await Promise.all(body.apps.map((id) => env.APPLICATIONS.getByName(id).rowsWritten()));
    return Response.json({ endpoints, apps });
  }
  if (path === '/call') {
    const value = await env.ENDPOINTS.getByName(body.webhookId)[body.method]();
    return Response.json(value ?? null);
  }
  if (path === '/size') {
    const endpoints = await Promise.all(body.webhookIds.map((id) => env.ENDPOINTS.getByName(id).size()));
    const apps = await Promise.all(body.apps.map((id) => env.APPLICATIONS.getByName(id).size()));
    return Response.json({ endpoints, apps });
  }
  return new Response('no such tool', { status: 404 });
} };`;

/**
 * The entry module of a service bundle run with the tool: the bundle's Worker and classes (counted
 * with `countRows`), its Endpoint with one method more, `seed`, that writes deliveries with their
 * state and attempts as they are given (the delivery log's data; the service itself has no such
 * path), and the `methods` (their source) that a measurement adds.
 */
const seedingEntry = (
  countRows,
  methods = [],
) => `import worker, { Endpoint as ServiceEndpoint, Application as ServiceApplication } from './index.js';
${countRows ? COUNTING : 'const counted = (Base) => Base;'}
export default worker;
export class Application extends counted(ServiceApplication) {}
export class Endpoint extends counted(ServiceEndpoint) {
  seed(webhookId, deliveries, attempts) {
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      sql.exec("INSERT OR IGNORE INTO endpoint (key, value) VALUES ('webhook_id', ?1)", webhookId);
      for (const d of deliveries) {
        sql.exec(
          \`INSERT OR IGNORE INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, attempts,
             schedule_start, recovery_id, next_attempt_at, last_attempt_at, last_status, last_error, created_at)
           VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)\`,
          d.delivery_id, d.event_id, d.message_id, d.app_id, d.type, d.payload, d.status, d.attempts, d.schedule_start,
          d.recovery_id, d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error, d.created_at,
        );
      }
      for (const a of attempts) {
        sql.exec(
          \`INSERT OR IGNORE INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
           VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7)\`,
          a.delivery_id, a.attempt, a.attempted_at, a.status, a.error, a.duration_ms, a.body,
        );
      }
    });
  }
  ${methods.join('\n  ')}
}`;

/**
 * Rows written, counted (`npm run bench`'s rows written per event): each object's class wrapped so
 * that every statement's cursor is kept and its `rowsWritten` summed when asked (`rowsWritten()`,
 * by RPC through the tool), with the calls of setAlarm and deleteAlarm beside them (each is a row
 * written by Cloudflare's rule, and no cursor shows it). What the constructor runs (the schema) is
 * not counted. The same wrapper for the service's classes and the floor's.
 */
const COUNTING = `const countedByObject = new Map();
function counted(Base) {
  return class extends Base {
    constructor(ctx, env) {
      super(ctx, env);
      // Per object, in the isolate: an object evicted and started again counts on.
      const key = ctx.id.toString();
      let c = countedByObject.get(key);
      if (c === undefined) {
        c = { rows: 0, statements: 0, alarms: 0, open: [] };
        countedByObject.set(key, c);
      }
      const fold = () => {
        for (const cursor of c.open) c.rows += cursor.rowsWritten;
        c.open = [];
      };
      const storage = ctx.storage;
      const sql = storage.sql;
      const exec = sql.exec.bind(sql);
      sql.exec = (...args) => {
        // The statements before this one are done (read to their end): their counts are final.
        fold();
        const cursor = exec(...args);
        c.open.push(cursor);
        c.statements++;
        return cursor;
      };
      for (const name of ['setAlarm', 'deleteAlarm']) {
        const call = storage[name].bind(storage);
        storage[name] = (...args) => {
          c.alarms++;
          return call(...args);
        };
      }
      this.counted = () => {
        fold();
        return { rows: c.rows, statements: c.statements, alarms: c.alarms };
      };
    }
    rowsWritten() {
      return this.counted();
    }
  };
}`;

/** The floor's entry when its rows are counted: its classes wrapped as the service's are. */
const FLOOR_COUNTING_ENTRY = `import worker, { FloorApplication as A, FloorEndpoint as E } from './floor.js';
${COUNTING}
export default worker;
export class FloorApplication extends counted(A) {}
export class FloorEndpoint extends counted(E) {}`;

/** WEBHOOK_SECRET_KEY: the AES-256-GCM key that seals webhooks' signing secrets at rest. */
export const SECRET_KEY = randomBytes(32).toString('base64');
const unlimited = { simple: { limit: 1_000_000_000, period: 60 } };

/**
 * Starts one worker with a fresh in-memory D1 holding `apps` x `perApp` webhooks (ids 1..n, app of
 * id i is `app-${(i - 1) % apps}`) and returns its URL, its D1, its Miniflare and a `dispose`.
 * `script` is a module's source, or `scriptPath` a file. Rate limits are lifted: load and
 * benchmark measure the service, not the limiter's budget (`configuredLimits`: wrangler.toml's). `queueProducers`, `queueConsumers` and
 * `durableObjects` are Miniflare's options of the same names; `schema`, the database's statements
 * (today's migrations by default; revisionConfig's for another revision).
 */
export async function startWorker({
  script,
  scriptPath,
  apps = 100,
  perApp = 100,
  log = false,
  limiters = true,
  inspectorPort,
  bindings = {},
  queueProducers,
  queueConsumers,
  durableObjects,
  tool = false,
  persist,
  configuredLimits = false,
  countRows = false,
  r2Buckets,
  endpointMethods = [],
  schema: statements = schema,
}) {
  const main = {
    name: 'main',
    modules: true,
    // modulesRoot: the bundle's own directory, which may lie outside this one (--baseline's).
    ...(script !== undefined
      ? countRows
        ? {
            modulesRoot: '/',
            modules: [
              { type: 'ESModule', path: '/bench-counting.js', contents: FLOOR_COUNTING_ENTRY },
              { type: 'ESModule', path: '/floor.js', contents: script },
            ],
          }
        : { script }
      : tool && durableObjects?.ENDPOINTS?.className === 'Endpoint'
        ? {
            // The service's bundle, behind the entry that gives its Endpoint the tool's seed.
            modulesRoot: new URL('.', scriptPath).pathname,
            modules: [
              {
                type: 'ESModule',
                path: new URL('bench-seeding.js', scriptPath).pathname,
                contents: seedingEntry(countRows, endpointMethods),
              },
              { type: 'ESModule', path: new URL(scriptPath).pathname, contents: readFileSync(new URL(scriptPath)) },
            ],
          }
        : { scriptPath: new URL(scriptPath).pathname, modulesRoot: new URL('.', scriptPath).pathname }),
    compatibilityDate: config.compatibility_date,
    d1Databases: { DB: 'bench' },
    r2Buckets,
    queueProducers,
    queueConsumers,
    durableObjects,
    bindings: {
      JWT_SECRET: SECRET,
      JWT_APP_CLAIM: 'sub',
      WEBHOOK_SECRET_KEY: SECRET_KEY,
      WEBHOOKS_PER_APP: '100',
      BENCH_APPS: String(apps),
      ...bindings,
    },
    // configuredLimits: wrangler.toml's own limits (what a client meets in production).
    ratelimits: configuredLimits
      ? Object.fromEntries(config.ratelimits.map(({ name, namespace_id, simple }) => [name, { namespace_id, simple }]))
      : limiters
        ? {
            APP_RATE_LIMITER: { namespace_id: '1001', ...unlimited },
            AUTH_FAILURE_RATE_LIMITER: { namespace_id: '1002', ...unlimited },
            PUBLISH_RATE_LIMITER: { namespace_id: '1003', ...unlimited },
          }
        : {},
  };
  // The tool's ENDPOINTS and APPLICATIONS: the worker under test's own objects (by class name).
  const objectOf = (binding) =>
    Object.entries(durableObjects ?? {}).find(([name]) => name === binding || name === `FLOOR_${binding}`)?.[1];
  const toolObjects = Object.fromEntries(
    ['ENDPOINTS', 'APPLICATIONS']
      .filter((b) => objectOf(b) !== undefined)
      .map((b) => [b, { ...objectOf(b), scriptName: 'main' }]),
  );
  const mf = new Miniflare({
    inspectorPort,
    ...(persist === undefined ? {} : { d1Persist: `${persist}/d1`, durableObjectsPersist: `${persist}/do` }),
    workers: tool
      ? [
          main,
          {
            name: 'tool',
            modules: true,
            script: TOOL_SCRIPT,
            compatibilityDate: config.compatibility_date,
            durableObjects: toolObjects,
          },
        ]
      : [main],
    // The Worker logs one line per request: kept out of the measurement unless asked for.
    handleRuntimeStdio: (stdout, stderr) => {
      if (log) {
        stdout.pipe(process.stdout);
        stderr.pipe(process.stderr);
      } else {
        stdout.resume();
        stderr.resume();
      }
    },
  });
  const url = await mf.ready;
  const db = await mf.getD1Database('DB');
  await db.batch(statements.map((sql) => db.prepare(sql)));
  await seed(db, apps, perApp);
  const toolWorker = tool ? await mf.getWorker('tool') : null;
  /** Calls the tool (POST `path` with `body` as JSON); resolves with its JSON reply. */
  const callTool = async (path, body) => {
    const res = await toolWorker.fetch(`http://tool${path}`, { method: 'POST', body: JSON.stringify(body) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`tool ${path}: ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };
  return { url: new URL(url).origin, db, mf, tool: callTool, dispose: () => mf.dispose() };
}

async function seed(db, apps, perApp) {
  const total = apps * perApp;
  const rows = [];
  for (let i = 1; i <= total; i++)
    rows.push(`(${i}, 'app-${(i - 1) % apps}', 'https://app-${(i - 1) % apps}.example/hook/${i}', ${i % 2})`);
  for (let i = 0; i < rows.length; i += 500) {
    await db.exec(
      `INSERT INTO webhooks (webhook_id, app_id, url, is_enabled) VALUES ${rows.slice(i, i + 500).join(',')}`,
    );
  }
}

/**
 * Adds webhooks: `count` of application `app` from id `firstId` on, at `url(id)`, enabled, with
 * `eventTypes(id)` (a JSON array's text, or null for every type) and, when `secret(id)` gives
 * one, that signing secret sealed as the service stores it.
 */
export async function addWebhooks(db, { app, firstId, count, url, eventTypes = () => null, secret }) {
  const rows = [];
  for (let id = firstId; id < firstId + count; id++) {
    const sealed = secret === undefined ? null : await seal(secret(id));
    rows.push(
      db
        .prepare(
          'INSERT INTO webhooks (webhook_id, app_id, url, is_enabled, event_types, secret) VALUES (?, ?, ?, 1, ?, ?)',
        )
        .bind(id, app, url(id), eventTypes(id), sealed),
    );
  }
  await db.batch(rows);
}

/**
 * Publishing's applications (PUBLISH_APPS, four webhooks each), beside the seeded ones, with
 * signing secrets; their URL is the receiver's `/hold/<id>`, which never answers: each endpoint
 * object has six requests open until they time out (15 s), so the publish scenarios measure
 * publishing, with the sending parked and costing next to nothing, for the floor and the service alike.
 * `path` 'hook' instead: the receiver answers 204 at once, and the deliveries are sent meanwhile.
 */
export async function addPublishApps(db, origin, path = 'hold') {
  for (let a = 0; a < PUBLISH_APPS; a++) {
    const firstId = PUBLISH_FIRST_ID + a * PUBLISH_EVENT_TYPES.length;
    await addWebhooks(db, {
      app: `pub-${a}`,
      firstId,
      count: PUBLISH_EVENT_TYPES.length,
      url: (id) => `${origin}/${path}/${id}`,
      secret: secretOf,
      eventTypes: (id) => {
        const types = PUBLISH_EVENT_TYPES[id - firstId];
        return types === 'null' ? null : types;
      },
    });
  }
}

/**
 * The content filters' application (FILTER_APP) on a worker, through its API as a client makes
 * it: FILTER_WEBHOOKS webhooks at the receiver's `/hold/<k>` (never answered: sending stays
 * parked, as for addPublishApps), each with `filterOf(k)` when `filtered`, none otherwise; then
 * webhook 0's value set, FILTER_SET_SIZE addresses FILTER_SET_PER_CALL a call (on both workers,
 * so the application's objects hold the same data).
 */
export async function addFilterApp(url, origin, filtered) {
  const token = await tokenFor(FILTER_APP);
  const call = async (method, path, body) => {
    const { status, text } = await callJson(method, url + path, token, body);
    if (status >= 300) throw new Error(`${method} ${path}: ${status} ${text.slice(0, 300)}`);
    return JSON.parse(text).value;
  };
  const ids = [];
  for (let k = 0; k < FILTER_WEBHOOKS; k++) {
    const body = { url: `${origin}/hold/filter-${k}`, ...(filtered ? { filter: filterOf(k) } : {}) };
    ids.push((await call('POST', PATH, body)).webhook_id);
  }
  for (let i = 0; i < FILTER_SET_SIZE; i += FILTER_SET_PER_CALL) {
    const add = Array.from({ length: FILTER_SET_PER_CALL }, (_, j) => setAddress(i + j));
    await call('POST', `${PATH}/values`, { webhook_id: ids[0], add });
  }
  const { count } = await call('GET', `${PATH}/values?webhook_id=${ids[0]}&limit=1`);
  if (count !== FILTER_SET_SIZE) throw new Error(`value set: ${count} values, expected ${FILTER_SET_SIZE}`);
}

/**
 * The delivery log's data: for webhooks DELIVERY_LOG_FIRST_ID.. (DELIVERY_LOG_WEBHOOKS of them,
 * two per seeded application), one event per application and step, delivered to both of its
 * webhooks, DELIVERY_LOG_PER_WEBHOOK deliveries per webhook (ids interleaved, as a fan-out makes
 * them), most succeeded at the first attempt, some after a retry, some failed after three, some
 * still pending after one (their next attempt far ahead, so no alarm sends them); one attempt
 * record per attempt. Stored in each webhook's endpoint object through the tool worker (its
 * seed): the service's Endpoint or the floor's.
 */
export async function addDeliveryLog(worker, apps = 100) {
  const perApp = DELIVERY_LOG_WEBHOOKS / apps;
  const start = Date.parse('2026-11-01T00:00:00Z');
  const calls = [];
  for (let a = 0; a < apps; a++) {
    for (let k = 0; k < perApp; k++) {
      const webhookId = String(DELIVERY_LOG_FIRST_ID + a + k * apps);
      const deliveries = [];
      const attempts = [];
      for (let step = 0; step < DELIVERY_LOG_PER_WEBHOOK; step++) {
        const i = a + step * apps;
        const at = (s) => new Date(start + s * 1000).toISOString();
        const type = i % 4 === 3 ? 'NFT_TRANSFER' : 'NEW_NFT';
        const eventId = `evt_bench${String(i).padStart(23, '0')}`;
        const status = step % 50 === 7 ? 'failed' : step % 50 === 9 ? 'pending' : 'succeeded';
        const tries = step % 50 === 7 ? 3 : step % 10 === 3 ? 2 : 1;
        const deliveryId = (((BigInt(start + i * 1000) - 1_577_836_800_000n) << 20n) | BigInt(k)).toString();
        const lastStatus = status === 'succeeded' ? 200 : step % 100 === 7 ? 503 : null;
        const lastError = status !== 'succeeded' && step % 100 !== 7 ? 'timeout' : null;
        deliveries.push({
          delivery_id: deliveryId,
          event_id: eventId,
          message_id: eventId,
          app_id: `app-${a}`,
          type,
          payload: JSON.stringify({ id: eventId, type, timestamp: at(i), data: nftData(i) }),
          created_at: at(i),
          status,
          attempts: tries,
          schedule_start: 0,
          recovery_id: null,
          next_attempt_at: status === 'pending' ? '2099-01-01T00:00:00.000Z' : null,
          last_attempt_at: at(i + tries * 30 - 29),
          last_status: lastStatus,
          last_error: lastError,
        });
        for (let n = 1; n <= tries; n++) {
          attempts.push({
            delivery_id: deliveryId,
            attempt: n,
            attempted_at: at(i + n * 30 - 29),
            status: n === tries ? lastStatus : 502,
            error: n === tries ? lastError : null,
            duration_ms: 40 + n * 7,
            body: n === tries && status === 'succeeded' ? '{"ok":true}' : 'Bad Gateway',
          });
        }
      }
      calls.push(() => worker.tool('/seed', { webhookId, deliveries, attempts }));
    }
  }
  for (let i = 0; i < calls.length; i += 8) await Promise.all(calls.slice(i, i + 8).map((call) => call()));
}

/** A webhook's signing secret (`whsec_` + base64 of 32 bytes) derived from its id: known to the receiver. */
export const secretOf = (id) =>
  `whsec_${Buffer.from(`bench-signing-secret-${String(id).padStart(11, '0')}`).toString('base64')}`;

const aesKey = crypto.subtle.importKey('raw', Buffer.from(SECRET_KEY, 'base64'), 'AES-GCM', false, ['encrypt']);

/** A secret sealed as the service stores it: `v1.` + base64(IV || AES-256-GCM ciphertext and tag). */
async function seal(secret) {
  const iv = randomBytes(12);
  const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, await aesKey, new TextEncoder().encode(secret));
  return `v1.${Buffer.concat([iv, Buffer.from(sealed)]).toString('base64')}`;
}

/** A valid token for `appId`, signed with the harness secret; `claims` adds to it (e.g. `scope`). */
export const tokenFor = (appId, claims = {}) =>
  new SignJWT({ sub: appId, ...claims })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(new TextEncoder().encode(SECRET));

/** A `method` request to `url` as `token`'s bearer, `body` sent as JSON when given: the status and the reply's text. */
export async function callJson(method, url, token, body) {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}
