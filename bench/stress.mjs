// npm run stress: many parallel mixed requests against the production bundle in workerd, then a
// check that the audit table matches the changes exactly. Exits non-zero on any 5xx or mismatch.
//   node bench/stress.mjs [--requests N] [--concurrency N] [--self-check]
// --self-check plants one doubled audit record after the load: the check must then fail.
import { buildBundle, option, ownerOf, PATH, startWorker, tokenFor } from './harness.mjs';

const REQUESTS = option('--requests', 6000);
const CONCURRENCY = option('--concurrency', 64);
const APPS = 10;
const PER_APP = 20; // 200 webhooks: many requests collide on the same ones
const WEBHOOKS = APPS * PER_APP;

const worker = await startWorker({ scriptPath: buildBundle().href, apps: APPS, perApp: PER_APP });
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
  if (roll < 0.95) return ['bad-type', 'PUT', `${PATH}`, bearer(tokenOf(id)), 'webhook_id=1'];
  return ['unknown', 'GET', '/v1.0/app/nft/webhooks', {}];
}

const byKind = new Map();
const count = (kind, status, code) => {
  const key = `${kind.padEnd(10)} ${status} ${code}`;
  byKind.set(key, (byKind.get(key) ?? 0) + 1);
};
const successfulDeletes = new Set();
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
const { results: rows } = await worker.db.prepare('SELECT webhook_id, app_id, is_enabled FROM webhooks').all();
const live = new Map(rows.map((r) => [r.webhook_id, r]));
const records = new Map();
for (const r of audit) records.set(r.webhook_id, [...(records.get(r.webhook_id) ?? []), r]);

for (let id = 1; id <= WEBHOOKS; id++) {
  let state = id % 2; // the seeded is_enabled
  let deleted = false;
  for (const r of records.get(id) ?? []) {
    const before = JSON.parse(r.row_before);
    if (deleted) problems.push(`webhook ${id}: a record after its delete`);
    if (before.is_enabled !== state)
      problems.push(`webhook ${id}: ${r.action} recorded from state ${before.is_enabled}, expected ${state}`);
    if (r.app_id !== ownerOf(id, APPS)) problems.push(`webhook ${id}: record for ${r.app_id}`);
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

console.log(`audit: ${audit.length} records for ${WEBHOOKS} webhooks (${successfulDeletes.size} deleted)`);
if (serverErrors > 0) problems.push(`${serverErrors} replies were 5xx`);
if (problems.length > 0) {
  console.error(`FAILED: ${problems.length} problems\n${problems.slice(0, 20).join('\n')}`);
  process.exit(1);
}
console.log('OK: zero 5xx; every change recorded exactly once, nothing lost, nothing doubled');
