// npm run stress: many parallel mixed requests (all four operations, foreign and bad ones) against
// the production bundle in workerd, then a check that the audit table matches the changes exactly
// and that POST's rules held. Exits non-zero on any 5xx or mismatch.
//   node bench/stress.mjs [--requests N] [--concurrency N] [--self-check]
// --self-check plants one doubled audit record after the load: the check must then fail.
import { buildBundle, option, ownerOf, PATH, SERVICE_OBJECTS, startWorker, tokenFor } from './harness.mjs';

const REQUESTS = option('--requests', 6000);
const CONCURRENCY = option('--concurrency', 64);
const APPS = 10;
const PER_APP = 20; // 200 webhooks: many requests collide on the same ones
const WEBHOOKS = APPS * PER_APP;

const worker = await startWorker({
  scriptPath: buildBundle().href,
  apps: APPS,
  perApp: PER_APP,
  durableObjects: SERVICE_OBJECTS,
});
const tokens = await Promise.all(Array.from({ length: APPS }, (_, i) => tokenFor(`app-${i}`)));
const tokenOf = (id) => tokens[Number(ownerOf(id, APPS).slice(4))];
const otherToken = (id) => tokens[(Number(ownerOf(id, APPS).slice(4)) + 1) % APPS];

const pick = (n) => 1 + Math.floor(Math.random() * n);
const json = { 'content-type': 'application/json' };
const bearer = (t) => ({ authorization: `Bearer ${t}` });

/** One random request, and what kind it is. */
function randomRequest() {
  const id = pick(WEBHOOKS);
  const roll = Math.random();
  if (roll < 0.45)
    return [
      'put',
      'PUT',
      `${PATH}`,
      { ...json, ...bearer(tokenOf(id)) },
      JSON.stringify({ webhook_id: id, is_enabled: Math.random() < 0.5 }),
    ];
  if (roll < 0.52)
    return [
      'put-check',
      'PUT',
      `${PATH}`,
      { ...json, ...bearer(tokenOf(id)) },
      JSON.stringify({ webhook_id: String(id) }),
    ];
  if (roll < 0.57) return ['delete', 'DELETE', `${PATH}?webhook_id=${id}`, bearer(tokenOf(id))];
  if (roll < 0.67)
    return [
      'foreign',
      Math.random() < 0.5 ? 'PUT' : 'DELETE',
      `${PATH}?webhook_id=${id}`,
      { ...json, ...bearer(otherToken(id)) },
      JSON.stringify({ webhook_id: id, is_enabled: false }),
    ];
  if (roll < 0.77) return ['bad-token', 'DELETE', `${PATH}?webhook_id=${id}`, bearer(`${tokenOf(id)}x`)];
  if (roll < 0.87)
    return [
      'bad-input',
      'PUT',
      `${PATH}`,
      { ...json, ...bearer(tokenOf(id)) },
      JSON.stringify({ webhook_id: `${id}.5`, is_enabled: 'yes' }),
    ];
  if (roll < 0.9) return ['bad-type', 'PUT', `${PATH}`, bearer(tokenOf(id)), 'webhook_id=1'];
  if (roll < 0.95) {
    // Registrations that collide: a few URLs per application, and a few Idempotency-Keys reused
    // with the same or another body (replays, 422s, 409s).
    const app = pick(APPS) - 1;
    const headers = { ...json, ...bearer(tokens[app]) };
    if (Math.random() < 0.5) headers['idempotency-key'] = `k${pick(5)}`;
    return ['create', 'POST', PATH, headers, JSON.stringify({ url: `https://hooks.example.com/s/${pick(15)}` })];
  }
  if (roll < 0.98)
    return Math.random() < 0.5
      ? ['read', 'GET', `${PATH}?webhook_id=${pick(WEBHOOKS + 60)}`, bearer(tokens[pick(APPS) - 1])]
      : ['list', 'GET', `${PATH}?limit=${pick(100)}`, bearer(tokens[pick(APPS) - 1])];
  return ['unknown', 'GET', '/v1.0/app/nft/webhooks', {}];
}

const byKind = new Map();
const count = (kind, status, code) => {
  const key = `${kind.padEnd(10)} ${status} ${code}`;
  byKind.set(key, (byKind.get(key) ?? 0) + 1);
};
const successfulDeletes = new Set();
/** Ids of webhooks that POSTs answered as newly made (replays not counted). */
const created = [];
let sent = 0;
let serverErrors = 0;

const started = performance.now();
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (sent < REQUESTS) {
      sent++;
      const [kind, method, path, headers, body] = randomRequest();
      const res = await fetch(worker.url + path, { method, headers, body });
      const text = await res.text();
      const code = method === 'HEAD' ? '-' : JSON.parse(text).return;
      count(kind, res.status, code);
      if (res.status >= 500) serverErrors++;
      if (kind === 'delete' && res.status === 200)
        successfulDeletes.add(Number(new URL(path, worker.url).searchParams.get('webhook_id')));
      if (kind === 'create' && res.status === 201 && res.headers.get('idempotent-replayed') === null)
        created.push(JSON.parse(text).value.webhook_id);
    }
  }),
);
const seconds = (performance.now() - started) / 1000;

console.log(
  `${REQUESTS} requests, ${CONCURRENCY} in parallel, ${seconds.toFixed(1)} s (${Math.round(REQUESTS / seconds)} req/s)`,
);
console.log('kind       status return  count');
for (const [key, n] of [...byKind].sort()) console.log(`${key.padEnd(24)} ${n}`);

if (process.argv.includes('--self-check')) {
  await worker.db.exec(
    'INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, request_id) SELECT webhook_id, app_id, action, row_before, actor, request_id FROM webhook_audit ORDER BY audit_id DESC LIMIT 1',
  );
}

// The audit table against the changes: replay each webhook's records from its seeded state.
const problems = [];
const { results: audit } = await worker.db
  .prepare('SELECT webhook_id, app_id, action, row_before FROM webhook_audit ORDER BY audit_id')
  .all();
const { results: rows } = await worker.db.prepare('SELECT webhook_id, app_id, url, is_enabled FROM webhooks').all();
const live = new Map(rows.map((r) => [r.webhook_id, r]));
const records = new Map();
for (const r of audit) records.set(r.webhook_id, [...(records.get(r.webhook_id) ?? []), r]);

// Webhooks POST made: each has exactly one create record, first, holding the row as created;
// no application has one URL twice or more than 100 webhooks.
const made = [...records.keys()].filter((id) => id > WEBHOOKS);
if (made.length !== created.length || made.some((id) => !created.includes(id)))
  problems.push(`POST answered ${created.length} new webhooks, the audit has ${made.length} creates`);
const urls = new Set();
for (const row of rows.filter((r) => r.webhook_id > WEBHOOKS)) {
  const key = `${row.app_id} ${row.url}`;
  if (urls.has(key)) problems.push(`${key}: registered twice`);
  urls.add(key);
}
for (let app = 0; app < APPS; app++) {
  const n = rows.filter((r) => r.app_id === `app-${app}`).length;
  if (n > 100) problems.push(`app-${app}: ${n} webhooks, over the cap`);
}

for (const id of [...Array.from({ length: WEBHOOKS }, (_, i) => i + 1), ...made]) {
  const history = records.get(id) ?? [];
  if (id > WEBHOOKS && (history[0]?.action !== 'create' || history.filter((r) => r.action === 'create').length !== 1))
    problems.push(`webhook ${id}: not exactly one create record, first`);
  let state = id > WEBHOOKS ? JSON.parse(history[0].row_before).is_enabled : id % 2; // as created, or seeded
  let deleted = false;
  for (const r of id > WEBHOOKS ? history.slice(1) : history) {
    const before = JSON.parse(r.row_before);
    if (deleted) problems.push(`webhook ${id}: a record after its delete`);
    if (before.is_enabled !== state)
      problems.push(`webhook ${id}: ${r.action} recorded from state ${before.is_enabled}, expected ${state}`);
    if (id <= WEBHOOKS && r.app_id !== ownerOf(id, APPS)) problems.push(`webhook ${id}: record for ${r.app_id}`);
    if (r.action === 'delete') deleted = true;
    else if ((r.action === 'enable') === (state === 1))
      problems.push(`webhook ${id}: ${r.action} but it was already ${state}`);
    else state = r.action === 'enable' ? 1 : 0;
  }
  const row = live.get(id);
  if (deleted !== successfulDeletes.has(id))
    problems.push(`webhook ${id}: deleted=${deleted} but a successful DELETE=${successfulDeletes.has(id)}`);
  if (deleted && row !== undefined) problems.push(`webhook ${id}: delete recorded, row still there`);
  if (!deleted && row === undefined) problems.push(`webhook ${id}: row gone without a delete record`);
  if (row !== undefined && row.is_enabled !== state)
    problems.push(`webhook ${id}: is_enabled ${row.is_enabled}, records say ${state}`);
}
await worker.dispose();

console.log(
  `audit: ${audit.length} records for ${WEBHOOKS} seeded and ${made.length} registered webhooks (${successfulDeletes.size} deleted)`,
);
if (serverErrors > 0) problems.push(`${serverErrors} replies were 5xx`);
if (problems.length > 0) {
  console.error(`FAILED: ${problems.length} problems\n${problems.slice(0, 20).join('\n')}`);
  process.exit(1);
}
console.log('OK: zero 5xx; every change recorded exactly once, nothing lost, nothing doubled');
