// Runs Workers in workerd through miniflare for the load and benchmark scripts: the production
// bundle (as `wrangler deploy` would upload it) or a reference worker, each with a local D1 that
// has the real schema and seeded webhooks.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
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
  PUBLISH_APPS,
  PUBLISH_EVENT_TYPES,
  PUBLISH_FIRST_ID,
} from './scenarios.mjs';

export { ownerOf, PATH } from './scenarios.mjs';

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
// The database is made by the migrations, in order, as `npm start` and a deploy make theirs.
const migrations = new URL('migrations/', root);
const schema = readdirSync(migrations)
  .filter((f) => f.endsWith('.sql'))
  .sort()
  .flatMap((f) => unstable_splitSqlQuery(readFileSync(new URL(f, migrations), 'utf8')));
export const SECRET = randomBytes(32).toString('base64url');
/** The service's Durable Objects (wrangler.toml), as Miniflare binds them: the reference workers have none. */
export const SERVICE_OBJECTS = { ENDPOINTS: { className: 'Endpoint', useSQLite: true } };

/** WEBHOOK_SECRET_KEY: the AES-256-GCM key that seals webhooks' signing secrets at rest. */
export const SECRET_KEY = randomBytes(32).toString('base64');
const unlimited = { simple: { limit: 1_000_000_000, period: 60 } };

/**
 * Starts one worker with a fresh in-memory D1 holding `apps` x `perApp` webhooks (ids 1..n, app of
 * id i is `app-${(i - 1) % apps}`) and returns its URL, its D1, its Miniflare and a `dispose`.
 * `script` is a module's source, or `scriptPath` a file. Rate limits are lifted: load and
 * benchmark measure the service, not the limiter's budget. `queueProducers`, `queueConsumers` and
 * `durableObjects` are Miniflare's options of the same names.
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
}) {
  const mf = new Miniflare({
    modules: true,
    inspectorPort,
    // modulesRoot: the bundle's own directory, which may lie outside this one (--baseline's).
    ...(script !== undefined
      ? { script }
      : { scriptPath: new URL(scriptPath).pathname, modulesRoot: new URL('.', scriptPath).pathname }),
    compatibilityDate: config.compatibility_date,
    d1Databases: { DB: 'bench' },
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
    ratelimits: limiters
      ? {
          APP_RATE_LIMITER: { namespace_id: '1001', ...unlimited },
          AUTH_FAILURE_RATE_LIMITER: { namespace_id: '1002', ...unlimited },
          PUBLISH_RATE_LIMITER: { namespace_id: '1003', ...unlimited },
        }
      : {},
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
  await db.batch(schema.map((sql) => db.prepare(sql)));
  await seed(db, apps, perApp);
  return { url: new URL(url).origin, db, mf, dispose: () => mf.dispose() };
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

/** Publishing's applications (PUBLISH_APPS, four webhooks each), beside the seeded ones. */
export async function addPublishApps(db) {
  for (let a = 0; a < PUBLISH_APPS; a++) {
    const firstId = PUBLISH_FIRST_ID + a * PUBLISH_EVENT_TYPES.length;
    await addWebhooks(db, {
      app: `pub-${a}`,
      firstId,
      count: PUBLISH_EVENT_TYPES.length,
      url: (id) => `https://pub-${a}.example/hook/${id}`,
      eventTypes: (id) => {
        const types = PUBLISH_EVENT_TYPES[id - firstId];
        return types === 'null' ? null : types;
      },
    });
  }
}

/**
 * The delivery log's data: for webhooks DELIVERY_LOG_FIRST_ID.. (DELIVERY_LOG_WEBHOOKS of them,
 * two per seeded application), one event per application and step, delivered to both of its
 * webhooks, DELIVERY_LOG_PER_WEBHOOK deliveries per webhook (ids interleaved, as a fan-out makes
 * them), most succeeded at the first attempt, some after a retry, some failed after three, some
 * still pending after one; one attempt record per attempt. SQL makes the rows (a recursive CTE),
 * so seeding takes well under a second.
 */
export async function addDeliveryLog(db, apps = 100) {
  const perApp = DELIVERY_LOG_WEBHOOKS / apps;
  const events = apps * DELIVERY_LOG_PER_WEBHOOK;
  // Event i: application i % apps, created i seconds after the start.
  const at = (seconds) => `strftime('%Y-%m-%dT%H:%M:%fZ', '2026-11-01T00:00:00Z', '+' || (${seconds}) || ' seconds')`;
  await db.batch([
    db.prepare(
      `INSERT INTO events (event_id, app_id, source_key, type, payload, created_at)
       WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${events - 1})
       SELECT printf('evt_bench%023d', i), 'app-' || (i % ${apps}), 'id:bench-' || i,
         CASE i % 4 WHEN 3 THEN 'NFT_TRANSFER' ELSE 'NEW_NFT' END,
         json_object('id', printf('evt_bench%023d', i), 'type', CASE i % 4 WHEN 3 THEN 'NFT_TRANSFER' ELSE 'NEW_NFT' END,
           'timestamp', ${at('i')},
           'data', json_object('chain_id', 1, 'contract', '0x5af0d9827e0c53e4799bb226655a1de152a425a5',
             'token_id', CAST(1000000 + i AS TEXT), 'owner', printf('0x%040x', i), 'block_number', 19000000 + i,
             'tx_hash', printf('0x%064x', i))),
         ${at('i')}
       FROM n`,
    ),
    // Delivery of event i to its application's k-th webhook of the set; its fate from the step (i / apps).
    db.prepare(
      `INSERT INTO deliveries (event_id, webhook_id, app_id, status, attempts, next_attempt_at,
         last_attempt_at, last_status, last_error, created_at)
       WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${events - 1}),
         k(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM k WHERE k < ${perApp - 1}),
         d AS (SELECT i, i / ${apps} AS step, k, ${DELIVERY_LOG_FIRST_ID} + (i % ${apps}) + k * ${apps} AS webhook_id FROM n, k),
         f AS (SELECT *, CASE WHEN step % 50 = 7 THEN 'failed' WHEN step % 50 = 9 THEN 'pending' ELSE 'succeeded' END AS status,
           CASE WHEN step % 50 = 7 THEN 3 WHEN step % 10 = 3 THEN 2 ELSE 1 END AS attempts FROM d)
       SELECT printf('evt_bench%023d', i), webhook_id, 'app-' || (i % ${apps}), status, attempts,
         CASE status WHEN 'pending' THEN ${at('i + 60')} END, ${at('i + attempts * 30 - 29')},
         CASE WHEN status = 'succeeded' THEN 200 WHEN step % 100 = 7 THEN 503 END,
         CASE WHEN status <> 'succeeded' AND step % 100 <> 7 THEN 'timeout' END, ${at('i')}
       FROM f ORDER BY i, k`,
    ),
    // Attempt a of each delivery: failures before the last, the last as the delivery records it.
    db.prepare(
      `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
       WITH RECURSIVE a(a) AS (SELECT 1 UNION ALL SELECT a + 1 FROM a WHERE a < 3)
       SELECT d.delivery_id, a.a, strftime('%Y-%m-%dT%H:%M:%fZ', d.created_at, '+' || (a.a * 30 - 29) || ' seconds'),
         CASE WHEN a.a = d.attempts THEN d.last_status ELSE 502 END,
         CASE WHEN a.a = d.attempts THEN d.last_error END, 40 + a.a * 7,
         CASE WHEN a.a = d.attempts AND d.status = 'succeeded' THEN '{"ok":true}' ELSE 'Bad Gateway' END
       FROM deliveries AS d JOIN a ON a.a <= d.attempts
       WHERE d.webhook_id >= ${DELIVERY_LOG_FIRST_ID} AND d.webhook_id < ${DELIVERY_LOG_FIRST_ID + DELIVERY_LOG_WEBHOOKS}`,
    ),
  ]);
}

/**
 * Publishing's deliveries go to a queue without a consumer (Miniflare drops what it is sent): the
 * publish scenario measures publishing, not delivering.
 */
export const PUBLISH_QUEUE_PRODUCERS = { DELIVERIES: 'bench-publish-deliveries' };

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
