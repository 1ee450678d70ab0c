// `npm run deploy` (scripts/deploy.mjs) without a Cloudflare account: wrangler is replaced at the
// process boundary (DEPLOY_WRANGLER) by a stand-in that records every call and answers like
// wrangler would for an account described by a small state file, and the script works on a
// temporary copy of wrangler.toml (DEPLOY_CONFIG). What is checked: the steps it runs, in order,
// what it creates and what it only finds, the secrets it insists on, the key set it puts, its
// refusals, and its smoke test (against a stand-in service in a process of its own).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unstable_readConfig } from 'wrangler';

const root = new URL('../..', import.meta.url).pathname;
const folder = mkdtempSync(join(tmpdir(), 'nft-webhook-deploy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const original = readFileSync(join(root, 'wrangler.toml'), 'utf8');
const PLACEHOLDER = '00000000-0000-0000-0000-000000000000';
const CREATED_ID = '11111111-2222-3333-4444-555555555555';

const allowedOrigins = (config: string, env?: string) =>
  unstable_readConfig({ config, env }, { hideWarnings: true }).vars?.WEBHOOK_URL_ALLOWED_ORIGINS;

/**
 * What the stand-in's account has; `secrets: null` means the Worker does not exist. `keysInUse`:
 * what D1 answers for the key ids of the stored secrets (null: the database has no tables yet);
 * `put`: the secrets' values put through `wrangler secret put`; `deployOutput`: what deploy prints.
 * Its D1 database (any of them): `old`, the tables of the releases before the Durable Objects with
 * their rows (absent: none); `moveMigration: false`, it never had the move's migration
 * 0005_objects.sql; `postDeploy`, the post-deploy migrations applied.
 */
interface Account {
  databases: { uuid: string; name: string }[];
  queues: string[];
  /** Its R2 buckets (absent: none). */
  buckets?: string[];
  secrets: string[] | null;
  keysInUse?: { key_id: string; secrets: number }[] | null;
  put?: Record<string, string>;
  deployOutput?: string;
  old?: Record<string, number>;
  moveMigration?: boolean;
  postDeploy?: string[];
}

// The stand-in: records argv (one JSON line per call), answers from and updates the state file.
const FAKE = `#!/usr/bin/env node
const fs = require('node:fs');
const argv = process.argv.slice(2);
fs.appendFileSync(process.env.FAKE_WRANGLER_LOG, JSON.stringify(argv) + '\\n');
const state = JSON.parse(fs.readFileSync(process.env.FAKE_WRANGLER_STATE, 'utf8'));
const save = () => fs.writeFileSync(process.env.FAKE_WRANGLER_STATE, JSON.stringify(state));
const env = argv[argv.indexOf('--env') + 1];
const [a, b, c] = argv;
if (a === 'd1' && b === 'list') {
  console.warn('▲ [WARNING] a warning on stderr');
  console.log(JSON.stringify(state.databases, null, 2));
} else if (a === 'd1' && b === 'create') {
  state.databases.push({ uuid: '${CREATED_ID}', name: c });
  save();
  console.log("✅ Successfully created DB '" + c + "'");
} else if (a === 'queues' && b === 'info') {
  if (state.queues.includes(c)) console.log('Queue Name: ' + c + '\\nQueue ID: q-' + c);
  else {
    console.error('✘ [ERROR] Queue "' + c + '" does not exist. To create it, run: wrangler queues create ' + c);
    process.exit(1);
  }
} else if (a === 'queues' && b === 'create') {
  state.queues.push(c);
  save();
  console.log('✅ Created queue ' + c);
} else if (a === 'r2' && b === 'bucket' && c === 'info') {
  const name = argv[3];
  if ((state.buckets ?? []).includes(name)) {
    console.log(JSON.stringify({ name, created: '2026-01-01T00:00:00.000Z', location: 'ENAM', object_count: '0' }, null, 2));
  } else {
    console.error('✘ [ERROR] A request to the Cloudflare API (/accounts/a/r2/buckets/' + name + ') failed.');
    console.error('  The specified bucket does not exist. [code: 10006]');
    process.exit(1);
  }
} else if (a === 'r2' && b === 'bucket' && c === 'create') {
  state.buckets = [...(state.buckets ?? []), argv[3]];
  save();
  console.log("✅ Created bucket '" + argv[3] + "' with default storage class of Standard.");
} else if (a === 'secret' && b === 'list') {
  if (state.secrets === null) {
    console.error('✘ [ERROR] Worker "nft-webhook-api-' + env + '" (env: ' + env + ') not found.');
    process.exit(1);
  }
  console.log(JSON.stringify(state.secrets.map((name) => ({ name, type: 'secret_text' })), null, '  '));
} else if (a === 'd1' && b === 'execute' && argv.some((x) => x.startsWith('--command='))) {
  // The SQL the deploy script sends, answered from the state: which old tables there are, which
  // hold rows; the post-deploy migrations applied, and applying one (which drops the old tables).
  const sql = argv.find((x) => x.startsWith('--command=')).slice(10);
  const old = state.old ?? {};
  const names = (list) => [{ results: list.map((name) => ({ name })), success: true }];
  if (sql.includes('FROM sqlite_master')) console.log(JSON.stringify(names(Object.keys(old))));
  else if (sql.includes('WHERE EXISTS')) {
    const held = Object.keys(old).filter((t) => old[t] > 0);
    if (state.moveMigration === false) held.push('no 0005_objects.sql');
    console.log(JSON.stringify(names(held)));
  } else if (sql.includes('INSERT INTO d1_post_deploy_migrations')) {
    state.postDeploy = [...(state.postDeploy ?? []), /VALUES [(]'([^']+)'[)]/.exec(sql)[1]];
    delete state.old;
    save();
    console.log(JSON.stringify(names([])));
  } else if (sql.includes('SELECT name FROM d1_post_deploy_migrations')) {
    console.log(JSON.stringify([{ results: [], success: true }, ...names(state.postDeploy ?? [])]));
  } else {
    console.error('unexpected SQL: ' + sql);
    process.exit(3);
  }
} else if (a === 'd1' && b === 'migrations') {
  console.log('✅ migrations applied');
} else if (a === 'd1' && b === 'execute' && argv.includes('--remote') && argv.includes('--json')) {
  if (state.keysInUse === null) {
    console.error('✘ [ERROR] no such table: webhooks: SQLITE_ERROR');
    process.exit(1);
  }
  console.log(JSON.stringify([{ results: state.keysInUse ?? [], success: true, meta: {} }], null, 2));
} else if (a === 'secret' && b === 'put') {
  state.put = { ...state.put, [c]: fs.readFileSync(0, 'utf8') };
  if (!state.secrets.includes(c)) state.secrets.push(c);
  save();
  console.log('✨ Success! Uploaded secret ' + c);
} else if (a === 'deploy') {
  console.log(state.deployOutput ?? 'Deployed');
} else {
  console.error('unexpected wrangler call: ' + argv.join(' '));
  process.exit(3);
}
`;
const fake = join(folder, 'wrangler');
writeFileSync(fake, FAKE);
chmodSync(fake, 0o755);

let runs = 0;
/** Production's issuer and audience set, as a deploy of production needs them. */
const PRODUCTION = original.replace(
  /(\[env\.production\.vars\]\nJWT_ISSUER = )""\nJWT_AUDIENCE = ""/,
  '$1"https://issuer.example.com"\nJWT_AUDIENCE = "nft-webhook-api"',
);

/**
 * Runs the deploy script with `args` against an account and a copy of wrangler.toml (`toml`; by
 * default the repository's, with production's issuer and audience set), with `env` added.
 */
function deploy(args: string[], account: Account, toml = PRODUCTION, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(folder, `run-${++runs}-`));
  const config = join(dir, 'wrangler.toml');
  writeFileSync(config, toml);
  const state = join(dir, 'state.json');
  writeFileSync(state, JSON.stringify(account));
  const log = join(dir, 'calls.log');
  writeFileSync(log, '');
  const run = spawnSync('node', ['scripts/deploy.mjs', ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DEPLOY_CONFIG: config,
      DEPLOY_WRANGLER: fake,
      FAKE_WRANGLER_LOG: log,
      FAKE_WRANGLER_STATE: state,
      WRANGLER_SEND_METRICS: 'false',
      WEBHOOK_SECRET_KEYS: '',
      ...env,
    },
  });
  const calls = readFileSync(log, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as string[]);
  return {
    status: run.status,
    stdout: run.stdout,
    stderr: run.stderr,
    all: `${run.stdout}\n${run.stderr}`,
    config,
    toml: readFileSync(config, 'utf8'),
    account: JSON.parse(readFileSync(state, 'utf8')) as Account,
    calls,
    /** The calls without the `--config <file> --env <name>` every one of them ends with (and without their SQL). */
    steps: calls.map((argv) =>
      argv
        .slice(0, -4)
        .map((x) => (x.startsWith('--command=') ? '--command' : x))
        .join(' ')
        .replace(/--command [\s\S]*/, '--command <keys in use>'),
    ),
  };
}

const databaseId = (config: string, env: string) =>
  unstable_readConfig({ config, env }, { hideWarnings: true }).d1_databases?.find(
    (d: { binding: string }) => d.binding === 'DB',
  )?.database_id;

const PRODUCTION_QUEUES = ['nft-webhook-events'];
const STAGING_QUEUES = ['nft-webhook-events-staging'];
const PRODUCTION_BUCKETS = ['nft-webhook-history'];
const STAGING_BUCKETS = ['nft-webhook-history-staging'];
/** A read of the database (the old tables, the post-deploy migrations applied) or a post-deploy migration. */
const D1_EXECUTE = 'd1 execute DB --remote --json --command';
const POST_DEPLOY = ['0001_drop_moved_tables.sql'];
const SECRETS = ['JWT_SECRET', 'WEBHOOK_SECRET_KEY'];
const KEYS_IN_USE = 'd1 execute DB --remote --json --command <keys in use>';

describe('npm run deploy -- --env <staging|production>', () => {
  it('on an empty account: creates the database (writing its id), the queues and the R2 bucket, checks the secrets, migrates, deploys', () => {
    const run = deploy(['--env', 'production'], { databases: [], queues: [], secrets: SECRETS });
    expect(run.status, run.all).toBe(0);
    expect(run.steps).toEqual([
      'd1 list --json',
      'd1 create nft-webhooks',
      'd1 list --json',
      D1_EXECUTE,
      'queues info nft-webhook-events',
      'queues create nft-webhook-events',
      'r2 bucket info nft-webhook-history --json',
      'r2 bucket create nft-webhook-history',
      'secret list --format json',
      KEYS_IN_USE,
      'd1 migrations apply DB --remote',
      'deploy',
      D1_EXECUTE,
      D1_EXECUTE,
    ]);
    for (const argv of run.calls) expect(argv.slice(-4)).toEqual(['--config', run.config, '--env', 'production']);
    expect(run.account).toEqual({
      databases: [{ uuid: CREATED_ID, name: 'nft-webhooks' }],
      queues: PRODUCTION_QUEUES,
      buckets: PRODUCTION_BUCKETS,
      secrets: SECRETS,
      postDeploy: POST_DEPLOY,
    });
    expect(run.stdout).toContain(`Created D1 database nft-webhooks (id ${CREATED_ID}).`);
    expect(run.stdout).toContain('Created R2 bucket nft-webhook-history.');
    expect(run.stdout).toContain(`Wrote database_id = "${CREATED_ID}"`);
    expect(run.stdout).toContain('Created queue nft-webhook-events.');
    expect(run.stdout).toContain(`Post-deploy migrations applied: ${POST_DEPLOY.join(', ')}.`);
    // The id went into production's block only: staging still has the placeholder.
    expect(databaseId(run.config, 'production')).toBe(CREATED_ID);
    expect(databaseId(run.config, 'staging')).toBe(PLACEHOLDER);
    expect(run.toml.replace(CREATED_ID, PLACEHOLDER)).toBe(PRODUCTION);
  });

  it('on an account that has everything: finds it all and creates nothing (staging, as a positional argument too)', () => {
    const account = {
      databases: [
        { uuid: 'aaaaaaaa-0000-0000-0000-000000000001', name: 'nft-webhooks' },
        { uuid: 'bbbbbbbb-0000-0000-0000-000000000002', name: 'nft-webhooks-staging' },
      ],
      queues: [...PRODUCTION_QUEUES, ...STAGING_QUEUES],
      buckets: [...PRODUCTION_BUCKETS, ...STAGING_BUCKETS],
      secrets: ['JWT_SECRET', 'WEBHOOK_SECRET_KEY', 'OTHER'],
      postDeploy: POST_DEPLOY,
    };
    for (const args of [['--env', 'staging'], ['--env=staging'], ['staging']]) {
      const run = deploy(args, account);
      expect(run.status, run.all).toBe(0);
      expect(run.steps).toEqual([
        'd1 list --json',
        D1_EXECUTE,
        'queues info nft-webhook-events-staging',
        'r2 bucket info nft-webhook-history-staging --json',
        'secret list --format json',
        KEYS_IN_USE,
        'd1 migrations apply DB --remote',
        'deploy',
        D1_EXECUTE,
      ]);
      for (const argv of run.calls) expect(argv.slice(-2)).toEqual(['--env', 'staging']);
      expect(run.stdout).toContain('Found D1 database nft-webhooks-staging (id bbbbbbbb-0000-0000-0000-000000000002).');
      expect(run.stdout).toContain('Found queue nft-webhook-events-staging.');
      expect(run.stdout).toContain('Found R2 bucket nft-webhook-history-staging.');
      expect(run.stdout).toContain('Post-deploy migrations applied: none pending.');
      expect(run.stdout).not.toContain('Created');
      expect(databaseId(run.config, 'staging')).toBe('bbbbbbbb-0000-0000-0000-000000000002');
      // Run again on the file it wrote: the id is there, nothing is written.
      const again = deploy(args, account, run.toml);
      expect(again.status, again.all).toBe(0);
      expect(again.stdout).not.toContain('Wrote database_id');
      expect(again.toml).toBe(run.toml);
    }
  });

  it('deploys nothing when no environment is named, and names those of wrangler.toml', () => {
    const run = deploy([], { databases: [], queues: [], secrets: SECRETS });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('Deploying nothing: name the environment (staging, production)');
    expect(run.calls).toEqual([]);
    // The environments are read from the file: one more is named too.
    const more = `${PRODUCTION}\n[env.canary]\nname = "nft-webhook-api-canary"\n`;
    const three = deploy([], { databases: [], queues: [], secrets: SECRETS }, more);
    expect(three.stderr).toContain('(staging, production, canary)');
    expect(three.calls).toEqual([]);
  });

  it.each([[['--env', 'dev']], [['--env']], [['local']], [['staging', 'production']]])(
    'answers %j with the usage (exit 2) and calls no wrangler',
    (args) => {
      const run = deploy(args, { databases: [], queues: [], secrets: SECRETS });
      expect(run.status).toBe(2);
      expect(run.stderr).toContain('Usage: npm run deploy -- [--env] <staging|production>');
      expect(run.calls).toEqual([]);
    },
  );

  it('stops naming WEBHOOK_SECRET_KEYS when neither it nor WEBHOOK_SECRET_KEY is set: no migration, no deploy', () => {
    const run = deploy(['--env', 'production'], { databases: [], queues: [], secrets: ['JWT_SECRET'] });
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain('required secrets of nft-webhook-api-production are not set');
    expect(run.stderr).toContain(
      'WEBHOOK_SECRET_KEYS: (umask 077; echo "$(date -u +%Y-%m):$(openssl rand -base64 32)" > production-secret-keys), keep a copy, then npx wrangler secret put WEBHOOK_SECRET_KEYS --env production < production-secret-keys',
    );
    expect(run.stderr).not.toContain('JWT_SECRET:');
    expect(run.steps.at(-1)).toBe('secret list --format json');
  });

  it('stops naming JWT_SECRET when no key source is set, and accepts JWT_JWKS_URL or JWT_PUBLIC_KEY instead', () => {
    const run = deploy(['--env', 'staging'], { databases: [], queues: [], secrets: ['WEBHOOK_SECRET_KEY'] });
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain('JWT_SECRET: npx wrangler secret put JWT_SECRET --env staging');
    expect(run.steps).not.toContain('deploy');

    const withJwks = original.replace(
      /(\[env\.staging\.vars\][\s\S]*?)^JWT_JWKS_URL = ""$/m,
      '$1JWT_JWKS_URL = "https://issuer.example.com/.well-known/jwks.json"',
    );
    expect(withJwks).not.toBe(original);
    const jwks = deploy(['--env', 'staging'], { databases: [], queues: [], secrets: ['WEBHOOK_SECRET_KEY'] }, withJwks);
    expect(jwks.status, jwks.all).toBe(0);
    const publicKey = deploy(['--env', 'staging'], {
      databases: [],
      queues: [],
      secrets: ['JWT_PUBLIC_KEY', 'WEBHOOK_SECRET_KEY'],
    });
    expect(publicKey.status, publicKey.all).toBe(0);
  });

  it('stops on a Worker that does not exist yet, with the commands that set its secrets', () => {
    const run = deploy(['--env', 'production'], { databases: [], queues: [], secrets: null });
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain('the Worker nft-webhook-api-production does not exist yet');
    expect(run.stderr).toContain(
      'npx wrangler secret put WEBHOOK_SECRET_KEYS --env production < production-secret-keys',
    );
    expect(run.stderr).toContain('npx wrangler secret put JWT_SECRET --env production');
    expect(run.steps).not.toContain('deploy');
  });

  it('stops when wrangler.toml names another database id than the account has, or one it does not have', () => {
    const toml = PRODUCTION.replace(
      /(\[\[env\.production\.d1_databases\]\][\s\S]*?)database_id = "0{8}-0{4}-0{4}-0{4}-0{12}"/,
      '$1database_id = "cccccccc-0000-0000-0000-000000000003"',
    );
    expect(databaseId(writeTemp(toml), 'production')).toBe('cccccccc-0000-0000-0000-000000000003');
    const other = deploy(
      ['production'],
      {
        databases: [{ uuid: 'dddddddd-0000-0000-0000-000000000004', name: 'nft-webhooks' }],
        queues: [],
        secrets: SECRETS,
      },
      toml,
    );
    expect(other.status, other.all).toBe(1);
    expect(other.stderr).toContain('has database_id cccccccc-0000-0000-0000-000000000003');
    expect(other.stderr).toContain('dddddddd-0000-0000-0000-000000000004');
    expect(other.steps).toEqual(['d1 list --json']);
    const gone = deploy(['production'], { databases: [], queues: [], secrets: SECRETS }, toml);
    expect(gone.status, gone.all).toBe(1);
    expect(gone.stderr).toContain('which this account does not have');
    expect(gone.steps).toEqual(['d1 list --json']);
  });
});

describe('npm run deploy over a database of the releases before the Durable Objects', () => {
  const account = (extra: Partial<Account>): Account => ({
    databases: [{ uuid: 'aaaaaaaa-0000-0000-0000-000000000001', name: 'nft-webhooks' }],
    queues: PRODUCTION_QUEUES,
    buckets: PRODUCTION_BUCKETS,
    secrets: SECRETS,
    ...extra,
  });
  const empty = { events: 0, deliveries: 0, delivery_attempts: 0, delivery_stats: 0 };

  it.each([
    [
      'rows in the old tables (the move has not run)',
      { old: { ...empty, events: 3, deliveries: 2, delivery_stats: 1 } },
      'events, deliveries, delivery_stats',
    ],
    [
      'empty old tables but no move migration (a release before the move is live)',
      { old: empty, moveMigration: false },
      'no 0005_objects.sql',
    ],
  ])('refuses %s before changing anything, naming the release to deploy first and why', (_, extra, named) => {
    const before = account(extra);
    const run = deploy(['production'], before, PRODUCTION.replace(PLACEHOLDER, 'aaaaaaaa-0000-0000-0000-000000000001'));
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain(`still holds deliveries of a release before the Durable Objects (${named})`);
    expect(run.stderr).toContain('Deploy release 6569f6d first (git checkout 6569f6d && npm run deploy -- production)');
    expect(run.stderr).toContain('moves them into the Durable Objects');
    expect(run.stderr).toContain('Nothing was changed.');
    // Two reads, nothing else: no queue, no migration, no deploy, no drop.
    expect(run.steps).toEqual(['d1 list --json', D1_EXECUTE, D1_EXECUTE]);
    expect(run.account).toEqual(before);
  });

  it('goes on over empty old tables of the move release: migrates, deploys, then drops them (once)', () => {
    const run = deploy(['production'], account({ old: empty }), PRODUCTION);
    expect(run.status, run.all).toBe(0);
    expect(run.steps).toEqual([
      'd1 list --json',
      D1_EXECUTE,
      D1_EXECUTE,
      'queues info nft-webhook-events',
      'r2 bucket info nft-webhook-history --json',
      'secret list --format json',
      KEYS_IN_USE,
      'd1 migrations apply DB --remote',
      'deploy',
      D1_EXECUTE,
      D1_EXECUTE,
    ]);
    // The drop goes after the deploy, with its record, as one command.
    const drop = run.calls.at(-1)?.find((x) => x.startsWith('--command=')) ?? '';
    expect(drop).toContain('DROP TABLE deliveries;');
    expect(drop).toContain("INSERT INTO d1_post_deploy_migrations (name) VALUES ('0001_drop_moved_tables.sql');");
    expect(run.account.old).toBeUndefined();
    expect(run.account.postDeploy).toEqual(POST_DEPLOY);
    const again = deploy(['production'], run.account, run.toml);
    expect(again.status, again.all).toBe(0);
    expect(again.steps.filter((s) => s === D1_EXECUTE)).toHaveLength(2);
    expect(again.stdout).toContain('Post-deploy migrations applied: none pending.');
  });
});

function writeTemp(toml: string) {
  const file = join(mkdtempSync(join(folder, 'toml-')), 'wrangler.toml');
  writeFileSync(file, toml);
  return file;
}

describe('npm run deploy and WEBHOOK_URL_ALLOWED_ORIGINS', () => {
  it('sets it in the local configuration only, never in staging or production', () => {
    const config = join(root, 'wrangler.toml');
    expect(allowedOrigins(config)).toContain('http://127.0.0.1:8790');
    expect(allowedOrigins(config, 'staging')).toBe('');
    expect(allowedOrigins(config, 'production')).toBe('');
  });

  it('refuses to deploy production when its configuration sets it (exit 1, naming the setting), before any wrangler call', () => {
    const production = '[env.production.vars]';
    const at = original.indexOf(production);
    expect(at).toBeGreaterThan(0);
    const head = original.slice(0, at);
    const tail = original.slice(at);
    const setting = /^WEBHOOK_URL_ALLOWED_ORIGINS = ""$/m;
    expect(tail).toMatch(setting);
    const toml = head + tail.replace(setting, 'WEBHOOK_URL_ALLOWED_ORIGINS = "http://127.0.0.1:8790"');
    // The copy sets it in production (and only there), or the script would go on to deploy.
    const config = writeTemp(toml);
    expect(allowedOrigins(config, 'production')).toBe('http://127.0.0.1:8790');
    expect(allowedOrigins(config, 'staging')).toBe('');

    for (const args of [['production'], ['--env', 'production']]) {
      const run = deploy(args, { databases: [], queues: [], secrets: SECRETS }, toml);
      expect(run.status, run.all).toBe(1);
      expect(run.stderr).toContain('Refusing to deploy production: WEBHOOK_URL_ALLOWED_ORIGINS is set');
      expect(run.stderr).toContain('http://127.0.0.1:8790');
      expect(run.calls).toEqual([]);
    }
  });
});

describe("npm run deploy and the platform's operational endpoint", () => {
  /** PRODUCTION with OPERATIONAL_WEBHOOK_URL set to `url` in production's vars. */
  const withUrl = (url: string) => {
    const at = PRODUCTION.indexOf('[env.production.vars]');
    const tail = PRODUCTION.slice(at);
    expect(tail).toMatch(/^OPERATIONAL_WEBHOOK_URL = ""$/m);
    return (
      PRODUCTION.slice(0, at) + tail.replace(/^OPERATIONAL_WEBHOOK_URL = ""$/m, `OPERATIONAL_WEBHOOK_URL = "${url}"`)
    );
  };
  const everything = () => ({
    databases: [{ uuid: 'aaaaaaaa-0000-0000-0000-000000000001', name: 'nft-webhooks' }],
    queues: PRODUCTION_QUEUES,
    secrets: [...SECRETS],
    postDeploy: POST_DEPLOY,
  });
  const secret = `whsec_${Buffer.from('a platform secret of 32 bytes!!!').toString('base64')}`;

  it('refuses a URL that is not https, and a malformed secret passed to it, before any wrangler call', () => {
    const http = deploy(['--env', 'production'], everything(), withUrl('http://ops.example.com/hooks'));
    expect(http.status, http.all).toBe(1);
    expect(http.stderr).toContain(
      'Refusing to deploy production: OPERATIONAL_WEBHOOK_URL ("http://ops.example.com/hooks") must be an absolute https URL',
    );
    expect(http.calls).toEqual([]);
    const bad = deploy(['--env', 'production'], everything(), withUrl('https://ops.example.com/hooks'), {
      OPERATIONAL_WEBHOOK_SECRET: 'whsec_c2hvcnQ=',
    });
    expect(bad.status, bad.all).toBe(1);
    expect(bad.stderr).toContain(
      'OPERATIONAL_WEBHOOK_SECRET (passed to npm run deploy) must be whsec_ followed by the base64 of 24 to 64 bytes',
    );
    expect(bad.all).not.toContain('c2hvcnQ=');
    expect(bad.calls).toEqual([]);
  });

  it('stops naming OPERATIONAL_WEBHOOK_SECRET when the URL is set and the secret is neither set nor passed: no migration, no deploy', () => {
    const run = deploy(['--env', 'production'], everything(), withUrl('https://ops.example.com/hooks'));
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain(
      'OPERATIONAL_WEBHOOK_SECRET (OPERATIONAL_WEBHOOK_URL is set): npx wrangler secret put OPERATIONAL_WEBHOOK_SECRET --env production',
    );
    expect(run.steps).not.toContain('deploy');
    expect(run.steps).not.toContain('d1 migrations apply DB --remote');
  });

  it('puts a passed secret (through stdin) before the deploy; one already set is enough', () => {
    const run = deploy(['--env', 'production'], everything(), withUrl('https://ops.example.com/hooks'), {
      OPERATIONAL_WEBHOOK_SECRET: secret,
    });
    expect(run.status, run.all).toBe(0);
    expect(run.account.put).toEqual({ OPERATIONAL_WEBHOOK_SECRET: secret });
    expect(run.steps.indexOf('secret put OPERATIONAL_WEBHOOK_SECRET')).toBeLessThan(run.steps.indexOf('deploy'));
    expect(JSON.stringify(run.calls)).not.toContain(secret);
    expect(run.stdout).toContain('Operational events of every application go to https://ops.example.com/hooks too.');
    const set = deploy(
      ['--env', 'production'],
      { ...everything(), secrets: [...SECRETS, 'OPERATIONAL_WEBHOOK_SECRET'] },
      withUrl('https://ops.example.com/hooks'),
    );
    expect(set.status, set.all).toBe(0);
    expect(set.steps).not.toContain('secret put OPERATIONAL_WEBHOOK_SECRET');
  });
});

describe("npm run deploy: production's issuer and audience", () => {
  it('refuses production without JWT_ISSUER and JWT_AUDIENCE, naming them and the override, before any wrangler call', () => {
    const run = deploy(['--env', 'production'], { databases: [], queues: [], secrets: SECRETS }, original);
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain('Refusing to deploy production: JWT_ISSUER and JWT_AUDIENCE are not set');
    expect(run.stderr).toContain('--single-issuer-keys');
    expect(run.calls).toEqual([]);
    const audienceOnly = original.replace(
      /(\[env\.production\.vars\]\n)JWT_ISSUER = ""/,
      '$1JWT_ISSUER = "https://issuer.example.com"',
    );
    const one = deploy(['production'], { databases: [], queues: [], secrets: SECRETS }, audienceOnly);
    expect(one.status, one.all).toBe(1);
    expect(one.stderr).toContain('Refusing to deploy production: JWT_AUDIENCE is not set');
    expect(one.calls).toEqual([]);
  });

  it('deploys production without them only with --single-issuer-keys, saying why; staging needs neither', () => {
    const run = deploy(
      ['--env', 'production', '--single-issuer-keys'],
      { databases: [], queues: [], secrets: SECRETS },
      original,
    );
    expect(run.status, run.all).toBe(0);
    expect(run.stdout).toContain(
      "Deploying production without JWT_ISSUER and JWT_AUDIENCE (--single-issuer-keys): its verification key is one issuer's, for this service alone.",
    );
    // The deploy, then the post-deploy migrations (their record read, the drop applied).
    expect(run.steps.slice(-3)).toEqual(['deploy', D1_EXECUTE, D1_EXECUTE]);
    const staging = deploy(['--env', 'staging'], { databases: [], queues: [], secrets: SECRETS }, original);
    expect(staging.status, staging.all).toBe(0);
  });
});

const key = (fill: number) => Buffer.alloc(32, fill).toString('base64');

describe('npm run deploy and the key set that seals signing secrets', () => {
  const account = (keysInUse: Account['keysInUse'], secrets = SECRETS): Account => ({
    databases: [{ uuid: 'aaaaaaaa-0000-0000-0000-000000000001', name: 'nft-webhooks' }],
    queues: PRODUCTION_QUEUES,
    buckets: PRODUCTION_BUCKETS,
    secrets,
    keysInUse,
  });

  it('puts a passed WEBHOOK_SECRET_KEYS that opens every stored secret, before the migrations and the deploy', () => {
    const keys = `2026-12:${key(2)} 2026-11:${key(1)}`;
    const run = deploy(
      ['--env', 'production'],
      account([
        { key_id: '2026-11', secrets: 2500 },
        { key_id: 'default', secrets: 3 },
      ]),
      PRODUCTION,
      {
        WEBHOOK_SECRET_KEYS: `  ${keys}\n`,
      },
    );
    expect(run.status, run.all).toBe(0);
    expect(run.steps.slice(-7, -2)).toEqual([
      'secret list --format json',
      KEYS_IN_USE,
      'secret put WEBHOOK_SECRET_KEYS',
      'd1 migrations apply DB --remote',
      'deploy',
    ]);
    // The value went through stdin, never on the command line; WEBHOOK_SECRET_KEY (the key default) stays.
    expect(run.account.put).toEqual({ WEBHOOK_SECRET_KEYS: keys });
    expect(JSON.stringify(run.calls)).not.toContain(key(2));
    expect(run.all).not.toContain(key(2));
    expect(run.stdout).toContain('Stored signing secrets, by the key that sealed them: 2026-11 (2500), default (3).');
    expect(run.stdout).toContain('The key set [2026-12, 2026-11, default] opens every stored signing secret.');
    expect(run.stdout).toContain('Put WEBHOOK_SECRET_KEYS: keys 2026-12, 2026-11; 2026-12 seals.');
  });

  it('refuses a key set that cannot open every stored secret: nothing put, no migration, no deploy', () => {
    const inUse = [
      { key_id: '2026-11', secrets: 40 },
      { key_id: '2026-12', secrets: 2460 },
    ];
    const run = deploy(['--env', 'production'], account(inUse), PRODUCTION, {
      WEBHOOK_SECRET_KEYS: `2026-12:${key(2)}`,
    });
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain(
      'Stopped: the key set [2026-12, default] cannot open every stored signing secret: 40 sealed with key 2026-11.',
    );
    expect(run.steps.at(-1)).toBe(KEYS_IN_USE);
    expect(run.account.put).toBeUndefined();
    // Without a passed key set, the Worker's WEBHOOK_SECRET_KEY alone (the key default) is checked too.
    const single = deploy(['--env', 'production'], account([{ key_id: '2026-12', secrets: 1 }]));
    expect(single.status, single.all).toBe(1);
    expect(single.stderr).toContain(
      'the key set [default] cannot open every stored signing secret: 1 sealed with key 2026-12',
    );
    expect(single.steps).not.toContain('deploy');
  });

  it.each([
    [
      'an entry without an id',
      `${key(1)}`,
      'an entry is not "<id>:<base64 of 32 bytes>" (ids: 1 to 32 letters, digits, _ or -)',
    ],
    ['a short key', `k1:${Buffer.alloc(16).toString('base64')}`, 'key k1 is not the base64 of 32 bytes'],
    ['an id named twice', `k1:${key(1)} k1:${key(2)}`, 'key k1 is named twice'],
  ])('refuses a passed WEBHOOK_SECRET_KEYS with %s before any wrangler call', (_, keys, problem) => {
    const run = deploy(['--env', 'production'], account([]), PRODUCTION, { WEBHOOK_SECRET_KEYS: keys });
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain(
      `Refusing to deploy production: WEBHOOK_SECRET_KEYS (passed to npm run deploy): ${problem}.`,
    );
    expect(run.calls).toEqual([]);
  });

  it('reads a new database (no tables yet) as holding no secret, and leaves a WEBHOOK_SECRET_KEYS it was not given as it is', () => {
    const fresh = deploy(['--env', 'production'], account(null));
    expect(fresh.status, fresh.all).toBe(0);
    expect(fresh.stdout).toContain('Stored signing secrets: none.');
    const kept = deploy(
      ['--env', 'production'],
      account([{ key_id: 'k9', secrets: 5 }], ['JWT_SECRET', 'WEBHOOK_SECRET_KEYS']),
    );
    expect(kept.status, kept.all).toBe(0);
    expect(kept.stdout).toContain('WEBHOOK_SECRET_KEYS stays as it is');
    expect(kept.steps).not.toContain('secret put WEBHOOK_SECRET_KEYS');
  });
});

/** A stand-in for the deployed service, in a process of its own (the deploy runs synchronously). */
const SERVICE = `
const http = require('node:http');
const fs = require('node:fs');
const [log, mode] = process.argv.slice(1);
http.createServer((req, res) => {
  fs.appendFileSync(log, JSON.stringify([req.method, req.url, req.headers.authorization ?? null]) + '\\n');
  if (req.url === '/portal/') {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html lang="en"></html>');
  } else if (mode === 'open') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"return":0,"message":"success"}');
  } else {
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"return":20004,"message":"Invalid jwt token"}');
  }
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });
`;

async function service(mode: 'refusing' | 'open') {
  const dir = mkdtempSync(join(folder, 'service-'));
  const log = join(dir, 'requests.log');
  writeFileSync(log, '');
  const child: ChildProcess = spawn('node', ['-e', SERVICE, log, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => child.stdout!.once('data', (d) => resolve(String(d).trim())));
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l)),
    stop: () => child.kill(),
  };
}

describe('npm run deploy: the smoke test after the deploy', () => {
  it('reads the portal and makes one refused call: GETs only, no token, nothing changed', async () => {
    const svc = await service('refusing');
    try {
      const run = deploy(['--env', 'production'], { databases: [], queues: [], secrets: SECRETS }, PRODUCTION, {
        DEPLOY_SMOKE_URL: `${svc.url}/`,
      });
      expect(run.status, run.all).toBe(0);
      expect(svc.requests()).toEqual([
        ['GET', '/portal/', null],
        ['GET', '/v1.0/app/nft/webhook?limit=1', null],
      ]);
      expect(run.stdout).toContain('Smoke test: GET /portal/ answered 200.');
      expect(run.stdout).toContain('Smoke test: GET /v1.0/app/nft/webhook?limit=1 answered 401.');
    } finally {
      svc.stop();
    }
  });

  it('fails the deploy, saying how to roll back, when the API does not refuse a call without a token', async () => {
    const svc = await service('open');
    try {
      const run = deploy(['--env', 'production'], { databases: [], queues: [], secrets: SECRETS }, PRODUCTION, {
        DEPLOY_SMOKE_URL: svc.url,
      });
      expect(run.status, run.all).toBe(1);
      expect(run.stderr).toContain('smoke test: GET');
      expect(run.stderr).toContain('answered 200: expected 401');
      expect(run.stderr).toContain('npx wrangler rollback --env production');
      expect(svc.requests().every(([method]: string[]) => method === 'GET')).toBe(true);
    } finally {
      svc.stop();
    }
  });

  it('skips it, saying so, when wrangler printed no workers.dev URL and none is given', () => {
    const run = deploy(['--env', 'production'], {
      databases: [],
      queues: [],
      secrets: SECRETS,
      deployOutput: 'Deployed (routes only)',
    });
    expect(run.status, run.all).toBe(0);
    expect(run.stdout).toContain('Smoke test skipped: wrangler printed no workers.dev URL; set DEPLOY_SMOKE_URL');
  });
});

describe('the CI workflow', () => {
  const workflow = readFileSync(join(root, '.github/workflows/ci.yml'), 'utf8');

  it('deploys through npm run deploy (so its refusals and checks apply), with the token and account in the environment', () => {
    const deployJob = workflow.slice(workflow.indexOf('\n  deploy:'));
    expect(deployJob).toContain('run: npm run deploy -- --env production');
    for (const name of ['CLOUDFLARE_API_TOKEN', 'CLOUDFLARE_ACCOUNT_ID']) {
      expect(deployJob).toContain(`${name}: $\{{ secrets.${name} }}`);
    }
    expect(workflow).not.toContain('wrangler-action');
  });

  it('tests on every Node version package.json and the README name', () => {
    const matrix = /node-version: \[([^\]]*)\]/.exec(workflow)?.[1];
    expect(matrix).toBeDefined();
    const versions = (matrix as string).split(',').map((v) => v.trim().replace(/['"]/g, ''));
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(versions.length).toBeGreaterThanOrEqual(2);
    for (const version of versions) {
      expect(readme).toContain(`Node ${version}`);
      expect(pkg.engines.node).toContain(version);
    }
  });
});

describe('npm run deploy and DESTINATION_API_BASES', () => {
  it('refuses to deploy staging when its configuration sets it (exit 1, naming the setting), before any wrangler call', () => {
    const staging = '[env.staging.vars]';
    const at = original.indexOf(staging);
    expect(at).toBeGreaterThan(0);
    const setting = /^DESTINATION_API_BASES = ""$/m;
    const tail = original.slice(at);
    expect(tail).toMatch(setting);
    const toml =
      original.slice(0, at) + tail.replace(setting, 'DESTINATION_API_BASES = "aws_sqs=http://127.0.0.1:9324"');
    const run = deploy(['staging'], { databases: [], queues: [], secrets: SECRETS }, toml);
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain('Refusing to deploy staging: DESTINATION_API_BASES is set');
    expect(run.calls).toEqual([]);
  });
});
