// npm run deploy -- --env <staging|production>  (also `npm run deploy -- staging`; no default:
// without an environment it deploys nothing and lists those of wrangler.toml)
//
// From an empty Cloudflare account to a deployed Worker, and safe to run again on every deploy:
//   1. refuses an environment that sets WEBHOOK_URL_ALLOWED_ORIGINS (local receivers only), production
//      without JWT_ISSUER and JWT_AUDIENCE (unless --single-issuer-keys), and a malformed
//      WEBHOOK_SECRET_KEYS passed in the environment; with OPERATIONAL_WEBHOOK_URL set, refuses a
//      URL that is not https and a malformed OPERATIONAL_WEBHOOK_SECRET passed in the environment;
//   2. the environment's D1 database: found by name, or created; its id written into wrangler.toml
//      when the file still has the placeholder;
//   3. refuses a database whose old delivery tables still hold rows (the release that moves them
//      into the Durable Objects must run first, see RELEASE_WITH_MOVE);
//   4. its queues (producers and consumers): each found, or created; its R2 buckets (the archive of
//      deliveries, HISTORY): each found, or created;
//   5. checks that the required secrets are set (WEBHOOK_SECRET_KEYS or WEBHOOK_SECRET_KEY, and
//      JWT_SECRET unless a public key or a JWK Set URL is configured), and stops naming the one
//      missing; reads from D1 which keys sealed the stored signing secrets and refuses a key set
//      that lacks one of them; puts WEBHOOK_SECRET_KEYS when it was passed in the environment;
//      with OPERATIONAL_WEBHOOK_URL set, OPERATIONAL_WEBHOOK_SECRET must be set or passed (then put);
//   6. applies the pending migrations to the remote database;
//   7. deploys the Worker;
//   8. applies the pending post-deploy migrations (scripts/post-deploy.mjs);
//   9. the smoke test, which changes nothing: the portal's page (a read) and the API without a
//      token (refused, 401), at the URL wrangler printed or DEPLOY_SMOKE_URL.
// Migrations go before the code and only expand the schema, so the release still live keeps
// working while they apply; what drops anything waits until this code is live (step 8). Every
// step says what it found and what it created.
//
// DEPLOY_CONFIG names another configuration file, DEPLOY_WRANGLER another wrangler executable
// (the tests use both: a copy of wrangler.toml and a stand-in that records its calls).
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { applyPostDeploy } from './post-deploy.mjs';

const root = new URL('..', import.meta.url);
const config = process.env.DEPLOY_CONFIG ?? new URL('../wrangler.toml', import.meta.url).pathname;
/** The environments of the configuration file: its [env.<name>] tables. */
const ENVIRONMENTS = [...readFileSync(config, 'utf8').matchAll(/^\[env\.([A-Za-z0-9_-]+)\]\s*$/gm)].map((m) => m[1]);
const USAGE = `Usage: npm run deploy -- [--env] <${ENVIRONMENTS.join('|')}> [--single-issuer-keys]`;
/** The database_id wrangler.toml ships with: "create the database and put its id here". */
const PLACEHOLDER_ID = '00000000-0000-0000-0000-000000000000';
/** Production may go without JWT_ISSUER and JWT_AUDIENCE only with this flag (see step 1). */
const SINGLE_ISSUER = '--single-issuer-keys';

function environmentArgument(args) {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(USAGE);
    process.exit(0);
  }
  let environment;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === SINGLE_ISSUER) continue;
    const value = arg === '--env' || arg === '-e' ? args[++i] : arg.startsWith('--env=') ? arg.slice(6) : arg;
    if (environment !== undefined || value === undefined || !ENVIRONMENTS.includes(value)) {
      console.error(USAGE);
      process.exit(2);
    }
    environment = value;
  }
  if (environment === undefined) {
    console.error(
      `Deploying nothing: name the environment (${ENVIRONMENTS.join(', ')}), e.g. npm run deploy -- --env ${ENVIRONMENTS[0]}.\n${USAGE}`,
    );
    process.exit(2);
  }
  return environment;
}

const args = process.argv.slice(2);
const environment = environmentArgument(args);
const stop = (message) => {
  console.error(`\nStopped: ${message}`);
  process.exit(1);
};

const { unstable_readConfig } = await import('wrangler');
const read = () => unstable_readConfig({ config, env: environment }, { hideWarnings: true });
const settings = read();

// 1. Local receivers only: a deployed Worker must never deliver into a private network.
const allowed = settings.vars?.WEBHOOK_URL_ALLOWED_ORIGINS;
if (typeof allowed === 'string' && allowed.trim() !== '') {
  console.error(
    `Refusing to deploy ${environment}: WEBHOOK_URL_ALLOWED_ORIGINS is set ("${allowed}"). It is for local receivers and test rigs only.`,
  );
  process.exit(1);
}

// 1. Destinations go to their APIs' own hosts: stand-ins are for local runs and tests.
const bases = settings.vars?.DESTINATION_API_BASES;
if (typeof bases === 'string' && bases.trim() !== '') {
  console.error(
    `Refusing to deploy ${environment}: DESTINATION_API_BASES is set ("${bases}"). It is for local stand-ins and test rigs only.`,
  );
  process.exit(1);
}

// 1. Production verifies tokens for this service only: the issuer and the audience are checked,
// unless the operator says that its keys are one issuer's, for this service alone.
const unset = (key) => typeof settings.vars?.[key] !== 'string' || settings.vars[key].trim() === '';
const unchecked = ['JWT_ISSUER', 'JWT_AUDIENCE'].filter(unset);
if (environment === 'production' && unchecked.length > 0) {
  if (!args.includes(SINGLE_ISSUER)) {
    console.error(
      `Refusing to deploy production: ${unchecked.join(' and ')} ${unchecked.length > 1 ? 'are' : 'is'} not set in [env.production.vars], so a token ` +
        'that any issuer trusted by the verification key made for any service would be accepted. Set them, or, ' +
        `when that key (a JWK Set, a public key, a JWT_SECRET) is used by one issuer for this service alone, deploy with ${SINGLE_ISSUER}.`,
    );
    process.exit(1);
  }
  console.log(
    `Deploying production without ${unchecked.join(' and ')} (${SINGLE_ISSUER}): its verification key is one issuer's, for this service alone.`,
  );
}

// 1. The platform's operational endpoint (docs/operational-events.md): when its URL is set, an
// https URL, and its secret, when passed to the deploy, a Standard Webhooks secret.
const operationalUrl = settings.vars?.OPERATIONAL_WEBHOOK_URL?.trim() || null;
const operationalSecret = process.env.OPERATIONAL_WEBHOOK_SECRET?.trim() || null;
if (operationalUrl !== null) {
  let url = null;
  try {
    url = new URL(operationalUrl);
  } catch {}
  if (url?.protocol !== 'https:' || url.username !== '' || url.password !== '') {
    console.error(
      `Refusing to deploy ${environment}: OPERATIONAL_WEBHOOK_URL ("${operationalUrl}") must be an absolute https URL without credentials.`,
    );
    process.exit(1);
  }
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(operationalSecret ?? 'whsec_unset');
  const bytes = match === null ? 0 : Buffer.from(match[1], 'base64').length;
  if (operationalSecret !== null && (bytes < 24 || bytes > 64)) {
    console.error(
      `Refusing to deploy ${environment}: OPERATIONAL_WEBHOOK_SECRET (passed to npm run deploy) must be whsec_ followed by the base64 of 24 to 64 bytes.`,
    );
    process.exit(1);
  }
}

// 1. WEBHOOK_SECRET_KEYS passed to the deploy: the key ring it puts, checked as the Worker checks it.
const ring = keyRing(process.env.WEBHOOK_SECRET_KEYS);

/** The ids of the keys of WEBHOOK_SECRET_KEYS (`<id>:<base64 of 32 bytes>`, space-separated); null when not passed. */
function keyRing(value) {
  if (value === undefined || value.trim() === '') return null;
  const ids = [];
  for (const entry of value.trim().split(/\s+/)) {
    const [, id, key] = /^([A-Za-z0-9_-]{1,32}):(.*)$/.exec(entry) ?? [];
    const bytes = key !== undefined && /^[A-Za-z0-9+/]+={0,2}$/.test(key) ? Buffer.from(key, 'base64') : null;
    const problem =
      id === undefined
        ? 'an entry is not "<id>:<base64 of 32 bytes>" (ids: 1 to 32 letters, digits, _ or -)'
        : ids.includes(id)
          ? `key ${id} is named twice`
          : bytes?.length !== 32
            ? `key ${id} is not the base64 of 32 bytes`
            : null;
    if (problem !== null) {
      console.error(`Refusing to deploy ${environment}: WEBHOOK_SECRET_KEYS (passed to npm run deploy): ${problem}.`);
      process.exit(1);
    }
    ids.push(id);
  }
  return ids;
}

/**
 * Runs wrangler with `args` for this environment. `capture`: its output is returned, not shown
 * (and a failure is returned too, for the caller to read). Otherwise a failure stops the deploy.
 */
function wrangler(args, { capture = false, input } = {}) {
  const [command, ...prefix] = process.env.DEPLOY_WRANGLER
    ? [process.env.DEPLOY_WRANGLER]
    : ['npx', '--no-install', 'wrangler'];
  const all = [...args, '--config', config, '--env', environment];
  if (!capture) console.log(`> wrangler ${args.join(' ')}`);
  const run = spawnSync(command, [...prefix, ...all], {
    cwd: root,
    encoding: 'utf8',
    input,
    stdio: [input === undefined ? 'ignore' : 'pipe', capture ? 'pipe' : 'inherit', capture ? 'pipe' : 'inherit'],
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
  });
  if (run.error) stop(`could not run wrangler: ${run.error.message}`);
  if (!capture && run.status !== 0) stop(`wrangler ${args.join(' ')} failed (exit ${run.status}).`);
  return { ok: run.status === 0, stdout: run.stdout ?? '', output: `${run.stdout ?? ''}${run.stderr ?? ''}`.trim() };
}

/** The JSON that a `--json` / `--format json` wrangler command printed (after any other lines). */
function json(result, what) {
  if (!result.ok) stop(`${what} failed:\n${result.output}`);
  const start = result.stdout.search(/^[[{]/m);
  try {
    return JSON.parse(result.stdout.slice(start));
  } catch {
    return stop(`${what} did not print JSON:\n${result.output}`);
  }
}

console.log(`Deploying ${settings.name} (environment ${environment}, ${config}).`);

// 2. The D1 database.
const database = settings.d1_databases?.find((d) => d.binding === 'DB');
if (!database?.database_name) stop(`[[env.${environment}.d1_databases]] has no DB binding with a database_name.`);
const name = database.database_name;
const configured = database.database_id ?? PLACEHOLDER_ID;
const listDatabases = () => json(wrangler(['d1', 'list', '--json'], { capture: true }), 'wrangler d1 list');
let found = listDatabases().find((d) => d.name === name);
if (found === undefined) {
  if (configured !== PLACEHOLDER_ID) {
    stop(
      `wrangler.toml names D1 database ${name} (database_id ${configured}), which this account does not have. ` +
        `Check the account (npx wrangler whoami, CLOUDFLARE_ACCOUNT_ID); to create a new one instead, set its database_id back to ${PLACEHOLDER_ID}.`,
    );
  }
  wrangler(['d1', 'create', name]);
  found = listDatabases().find((d) => d.name === name);
  if (found === undefined) stop(`wrangler d1 create ${name} succeeded, but wrangler d1 list does not show it.`);
  console.log(`Created D1 database ${name} (id ${found.uuid}).`);
} else {
  console.log(`Found D1 database ${name} (id ${found.uuid}).`);
}
if (configured === PLACEHOLDER_ID) {
  writeDatabaseId(found.uuid);
  console.log(
    `Wrote database_id = "${found.uuid}" into ${config}, under [[env.${environment}.d1_databases]]: commit that change.`,
  );
} else if (configured !== found.uuid) {
  stop(
    `wrangler.toml's [[env.${environment}.d1_databases]] has database_id ${configured}, but this account's database ${name} is ${found.uuid}. ` +
      `Put "${found.uuid}" there if that is the database to use.`,
  );
}

/** Replaces the placeholder database_id of this environment's DB in the configuration file. */
function writeDatabaseId(id) {
  const text = readFileSync(config, 'utf8');
  const header = `[[env.${environment}.d1_databases]]`;
  const start = text.indexOf(header);
  const next = start === -1 ? -1 : text.slice(start + header.length).search(/^\[/m);
  const end = next === -1 ? text.length : start + header.length + next;
  const block = start === -1 ? '' : text.slice(start, end);
  const line = /^database_id\s*=\s*"0{8}-0{4}-0{4}-0{4}-0{12}"\s*$/m;
  if (!line.test(block)) {
    stop(`could not find database_id = "${PLACEHOLDER_ID}" under ${header} in ${config}: put "${id}" there yourself.`);
  }
  writeFileSync(config, text.slice(0, start) + block.replace(line, `database_id = "${id}"`) + text.slice(end));
  if (read().d1_databases?.find((d) => d.binding === 'DB')?.database_id !== id) {
    stop(
      `wrote the database_id into ${config}, but wrangler does not read it back: put "${id}" under ${header} yourself.`,
    );
  }
}

// 3. D1's tables of the releases before the Durable Objects: this release has no move and drops
// them after it is live, so rows still in them (or a database that never had the move's
// migration, 0005_objects.sql) mean the move has not run: nothing is changed.
/** The release that moves D1's deliveries into the Durable Objects (git describe of its commit). */
const RELEASE_WITH_MOVE = '6569f6d';
const d1 = (sql) =>
  json(
    wrangler(['d1', 'execute', 'DB', '--remote', '--json', `--command=${sql}`], { capture: true }),
    'wrangler d1 execute',
  )
    .flatMap((r) => r.results ?? [])
    .map((r) => r.name);
const OLD_TABLES = ['events', 'deliveries', 'delivery_attempts', 'delivery_stats'];
const old = d1(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('${OLD_TABLES.join("', '")}')`);
const unmoved =
  old.length === 0
    ? []
    : d1(
        [
          ...old.map((t) => `SELECT '${t}' AS name WHERE EXISTS (SELECT 1 FROM ${t})`),
          `SELECT 'no 0005_objects.sql' AS name WHERE NOT EXISTS (SELECT 1 FROM d1_migrations WHERE name = '0005_objects.sql')`,
        ].join(' UNION ALL '),
      );
if (unmoved.length > 0) {
  stop(
    `D1 database ${name} still holds deliveries of a release before the Durable Objects (${unmoved.join(', ')}). ` +
      `Deploy release ${RELEASE_WITH_MOVE} first (git checkout ${RELEASE_WITH_MOVE} && npm run deploy -- ${environment}): ` +
      'its Cron Trigger moves them into the Durable Objects and empties those tables within a few minutes. ' +
      'This release has no move, and drops those tables once it is live. Nothing was changed.',
  );
}

// 4. The queues: every queue this environment produces to or consumes.
const queues = [
  ...new Set([
    ...(settings.queues?.producers ?? []).map((q) => q.queue),
    ...(settings.queues?.consumers ?? []).map((q) => q.queue),
  ]),
];
for (const queue of queues) {
  const info = wrangler(['queues', 'info', queue], { capture: true });
  if (info.ok && info.output.includes(`Queue Name: ${queue}`)) {
    console.log(`Found queue ${queue}.`);
  } else if (/does not exist/i.test(info.output)) {
    wrangler(['queues', 'create', queue]);
    console.log(`Created queue ${queue}.`);
  } else {
    stop(`wrangler queues info ${queue} failed:\n${info.output}`);
  }
}

// 4b. The R2 buckets: the archive of deliveries that ended (HISTORY).
for (const bucket of (settings.r2_buckets ?? []).map((b) => b.bucket_name)) {
  const info = wrangler(['r2', 'bucket', 'info', bucket, '--json'], { capture: true });
  if (info.ok && info.output.includes(`"name": "${bucket}"`)) {
    console.log(`Found R2 bucket ${bucket}.`);
  } else if (/does not exist|10006/i.test(info.output)) {
    wrangler(['r2', 'bucket', 'create', bucket]);
    console.log(`Created R2 bucket ${bucket}.`);
  } else {
    stop(`wrangler r2 bucket info ${bucket} failed:\n${info.output}`);
  }
}

// 5. The secrets. A key source: JWT_SECRET, or JWT_PUBLIC_KEY (secret or var), or JWT_JWKS_URL (var).
const put = (secret) => `npx wrangler secret put ${secret} --env ${environment}`;
const setVar = (key) => typeof settings.vars?.[key] === 'string' && settings.vars[key].trim() !== '';
const listed = wrangler(['secret', 'list', '--format', 'json'], { capture: true });
const newKeys = `(umask 077; echo "$(date -u +%Y-%m):$(openssl rand -base64 32)" > ${environment}-secret-keys)`;
if (!listed.ok && /not found/i.test(listed.output)) {
  stop(
    `the Worker ${settings.name} does not exist yet, so it has no secrets. Set WEBHOOK_SECRET_KEYS and the verification key (this creates the Worker):\n` +
      `  ${newKeys}    # then keep a copy of that file (docs/deploying.md)\n` +
      `  ${put('WEBHOOK_SECRET_KEYS')} < ${environment}-secret-keys\n` +
      `  ${put('JWT_SECRET')}    # or JWT_PUBLIC_KEY, or JWT_JWKS_URL in [env.${environment}.vars]\n` +
      'then run this again.',
  );
}
const secrets = new Set(json(listed, 'wrangler secret list').map((s) => s.name));
const missing = [];
if (ring === null && !secrets.has('WEBHOOK_SECRET_KEYS') && !secrets.has('WEBHOOK_SECRET_KEY'))
  missing.push(
    `WEBHOOK_SECRET_KEYS: ${newKeys}, keep a copy, then ${put('WEBHOOK_SECRET_KEYS')} < ${environment}-secret-keys`,
  );
if (
  !secrets.has('JWT_SECRET') &&
  !secrets.has('JWT_PUBLIC_KEY') &&
  !setVar('JWT_PUBLIC_KEY') &&
  !setVar('JWT_JWKS_URL')
) {
  missing.push(
    `JWT_SECRET: ${put('JWT_SECRET')} (or put JWT_PUBLIC_KEY the same way, or set JWT_JWKS_URL in [env.${environment}.vars])`,
  );
}
if (operationalUrl !== null && operationalSecret === null && !secrets.has('OPERATIONAL_WEBHOOK_SECRET'))
  missing.push(
    `OPERATIONAL_WEBHOOK_SECRET (OPERATIONAL_WEBHOOK_URL is set): ${put('OPERATIONAL_WEBHOOK_SECRET')}, a whsec_ secret (or pass it to npm run deploy)`,
  );
if (missing.length > 0) stop(`required secrets of ${settings.name} are not set:\n  ${missing.join('\n  ')}`);
console.log(`Secrets set: ${[...secrets].sort().join(', ')}.`);

// 5. The keys that sealed the stored signing secrets (webhooks' and Idempotency-Keys'), by id: the
// key set about to be deployed must hold every one, or their webhooks' deliveries would wait.
// WEBHOOK_SECRET_KEY's key is `default`, stored as `v1.`; every other key's form is `v2.<id>.`.
const KEYS_IN_USE = `SELECT key_id, COUNT(*) AS secrets FROM (
  SELECT CASE WHEN s LIKE 'v1.%' THEN 'default' ELSE substr(s, 4, instr(substr(s, 4), '.') - 1) END AS key_id
  FROM (SELECT secret AS s FROM webhooks UNION ALL SELECT previous_secret FROM webhooks
    UNION ALL SELECT json_extract(webhook_row, '$.secret') FROM idempotency_keys)
  WHERE s IS NOT NULL) GROUP BY key_id ORDER BY key_id`;
const inUse = wrangler(['d1', 'execute', 'DB', '--remote', '--json', '--command', KEYS_IN_USE], { capture: true });
// A new database has no tables before its first migration, and so no secrets.
const used =
  !inUse.ok && /no such table/i.test(inUse.output) ? [] : json(inUse, 'reading the key ids in use')[0].results;
console.log(
  used.length === 0
    ? 'Stored signing secrets: none.'
    : `Stored signing secrets, by the key that sealed them: ${used.map((u) => `${u.key_id} (${u.secrets})`).join(', ')}.`,
);
// The key set the Worker will have: the one passed (with WEBHOOK_SECRET_KEY's, which stays), or
// the Worker's own WEBHOOK_SECRET_KEY; a WEBHOOK_SECRET_KEYS already on the Worker is not readable.
const keySet =
  ring !== null
    ? [...ring, ...(secrets.has('WEBHOOK_SECRET_KEY') && !ring.includes('default') ? ['default'] : [])]
    : secrets.has('WEBHOOK_SECRET_KEYS')
      ? null
      : ['default'];
if (keySet === null) {
  console.log('WEBHOOK_SECRET_KEYS stays as it is (pass it to npm run deploy to check it against the stored secrets).');
} else {
  const lost = used.filter((u) => !keySet.includes(u.key_id));
  if (lost.length > 0) {
    stop(
      `the key set [${keySet.join(', ')}] cannot open every stored signing secret: ` +
        `${lost.map((u) => `${u.secrets} sealed with key ${u.key_id}`).join(', ')}. ` +
        'Keep those keys in WEBHOOK_SECRET_KEYS (after the new first one) until the Cron Trigger has re-sealed them (docs/deploying.md, rotating the key).',
    );
  }
  console.log(`The key set [${keySet.join(', ')}] opens every stored signing secret.`);
}
if (ring !== null) {
  wrangler(['secret', 'put', 'WEBHOOK_SECRET_KEYS'], { input: process.env.WEBHOOK_SECRET_KEYS.trim() });
  console.log(`Put WEBHOOK_SECRET_KEYS: keys ${ring.join(', ')}; ${ring[0]} seals.`);
}
if (operationalUrl !== null) {
  if (operationalSecret !== null) {
    wrangler(['secret', 'put', 'OPERATIONAL_WEBHOOK_SECRET'], { input: operationalSecret });
    console.log('Put OPERATIONAL_WEBHOOK_SECRET.');
  }
  console.log(`Operational events of every application go to ${operationalUrl} too.`);
}

// 6, 7 and 8. The schema, the code (wrangler's output shown once it ends: it names the URL), then
// what the release before no longer needs.
wrangler(['d1', 'migrations', 'apply', 'DB', '--remote']);
console.log('> wrangler deploy');
const deployed = wrangler(['deploy'], { capture: true });
console.log(deployed.output);
if (!deployed.ok) stop('wrangler deploy failed.');
const dropped = await applyPostDeploy((sql) =>
  json(
    wrangler(['d1', 'execute', 'DB', '--remote', '--json', `--command=${sql}`], { capture: true }),
    'wrangler d1 execute',
  ),
);
console.log(`Post-deploy migrations applied: ${dropped.length === 0 ? 'none pending' : dropped.join(', ')}.`);
console.log(`Deployed ${settings.name}.`);

// 9. The smoke test: a read and a refused call, nothing that changes anything.
const base = (process.env.DEPLOY_SMOKE_URL ?? /https:\/\/[^\s]+\.workers\.dev\b/.exec(deployed.stdout)?.[0])?.replace(
  /\/+$/,
  '',
);
if (base === undefined) {
  console.log("Smoke test skipped: wrangler printed no workers.dev URL; set DEPLOY_SMOKE_URL to the service's URL.");
} else {
  await smokeTest(base);
}

/** GET /portal/ answers the page (200), and the API refuses a call without a token (401, 20004). */
async function smokeTest(origin) {
  const rollback = `roll back with npx wrangler rollback --env ${environment} (docs/deploying.md)`;
  const check = async (path, expect) => {
    let res;
    try {
      res = await fetch(origin + path, { signal: AbortSignal.timeout(15_000), redirect: 'manual' });
    } catch (err) {
      stop(`smoke test: GET ${origin}${path} failed (${err.cause?.code ?? err.message}); ${rollback}.`);
    }
    const text = await res.text();
    const problem = expect(res, text);
    if (problem) stop(`smoke test: GET ${origin}${path} answered ${res.status}: ${problem}; ${rollback}.`);
    console.log(`Smoke test: GET ${path} answered ${res.status}.`);
  };
  await check('/portal/', (res, text) =>
    res.status === 200 && text.includes('<html') ? null : 'expected 200 with the portal page',
  );
  await check('/v1.0/app/nft/webhook?limit=1', (res, text) =>
    res.status === 401 && text === '{"return":20004,"message":"Invalid jwt token"}'
      ? null
      : 'expected 401 {"return":20004,"message":"Invalid jwt token"}',
  );
}
