// `npm run deploy` (scripts/deploy.mjs) without a Cloudflare account: wrangler is replaced at the
// process boundary (DEPLOY_WRANGLER) by a stand-in that records every call and answers like
// wrangler would for an account described by a small state file, and the script works on a
// temporary copy of wrangler.toml (DEPLOY_CONFIG). What is checked: the steps it runs, in order,
// what it creates and what it only finds, the secrets it insists on, and its refusals.
import { spawnSync } from 'node:child_process';
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
 * What the stand-in's account has; `secrets: null` means the Worker does not exist. Its D1
 * database (any of them): `old`, the tables of the releases before the Durable Objects with their
 * rows (absent: none); `moveMigration: false`, it never had the move's migration 0005_objects.sql;
 * `postDeploy`, the post-deploy migrations applied.
 */
interface Account {
  databases: { uuid: string; name: string }[];
  queues: string[];
  secrets: string[] | null;
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
} else if (a === 'secret' && b === 'list') {
  if (state.secrets === null) {
    console.error('✘ [ERROR] Worker "nft-webhook-api-' + env + '" (env: ' + env + ') not found.');
    process.exit(1);
  }
  console.log(JSON.stringify(state.secrets.map((name) => ({ name, type: 'secret_text' })), null, '  '));
} else if (a === 'd1' && b === 'execute') {
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
} else if (a === 'deploy') {
  console.log('Deployed');
} else {
  console.error('unexpected wrangler call: ' + argv.join(' '));
  process.exit(3);
}
`;
const fake = join(folder, 'wrangler');
writeFileSync(fake, FAKE);
chmodSync(fake, 0o755);

let runs = 0;
/** Runs the deploy script with `args` against an account and a copy of wrangler.toml (`toml`). */
function deploy(args: string[], account: Account, toml = original) {
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
        .join(' '),
    ),
  };
}

const databaseId = (config: string, env: string) =>
  unstable_readConfig({ config, env }, { hideWarnings: true }).d1_databases?.find(
    (d: { binding: string }) => d.binding === 'DB',
  )?.database_id;

const PRODUCTION_QUEUES = ['nft-webhook-events'];
const STAGING_QUEUES = ['nft-webhook-events-staging'];
/** A read of the database (the old tables, the post-deploy migrations applied) or a post-deploy migration. */
const D1_EXECUTE = 'd1 execute DB --remote --json --command';
const POST_DEPLOY = ['0001_drop_moved_tables.sql'];
const SECRETS = ['JWT_SECRET', 'WEBHOOK_SECRET_KEY'];

describe('npm run deploy -- --env <staging|production>', () => {
  it('on an empty account: creates the database (writing its id) and the queues, checks the secrets, migrates, deploys', () => {
    const run = deploy(['--env', 'production'], { databases: [], queues: [], secrets: SECRETS });
    expect(run.status, run.all).toBe(0);
    expect(run.steps).toEqual([
      'd1 list --json',
      'd1 create nft-webhooks',
      'd1 list --json',
      D1_EXECUTE,
      'queues info nft-webhook-events',
      'queues create nft-webhook-events',
      'secret list --format json',
      'd1 migrations apply DB --remote',
      'deploy',
      D1_EXECUTE,
      D1_EXECUTE,
    ]);
    for (const argv of run.calls) expect(argv.slice(-4)).toEqual(['--config', run.config, '--env', 'production']);
    expect(run.account).toEqual({
      databases: [{ uuid: CREATED_ID, name: 'nft-webhooks' }],
      queues: PRODUCTION_QUEUES,
      secrets: SECRETS,
      postDeploy: POST_DEPLOY,
    });
    expect(run.stdout).toContain(`Created D1 database nft-webhooks (id ${CREATED_ID}).`);
    expect(run.stdout).toContain(`Wrote database_id = "${CREATED_ID}"`);
    expect(run.stdout).toContain('Created queue nft-webhook-events.');
    expect(run.stdout).toContain(`Post-deploy migrations applied: ${POST_DEPLOY.join(', ')}.`);
    // The id went into production's block only: staging still has the placeholder.
    expect(databaseId(run.config, 'production')).toBe(CREATED_ID);
    expect(databaseId(run.config, 'staging')).toBe(PLACEHOLDER);
    expect(run.toml.replace(CREATED_ID, PLACEHOLDER)).toBe(original);
  });

  it('on an account that has everything: finds it all and creates nothing (staging, as a positional argument too)', () => {
    const account = {
      databases: [
        { uuid: 'aaaaaaaa-0000-0000-0000-000000000001', name: 'nft-webhooks' },
        { uuid: 'bbbbbbbb-0000-0000-0000-000000000002', name: 'nft-webhooks-staging' },
      ],
      queues: [...PRODUCTION_QUEUES, ...STAGING_QUEUES],
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
        'secret list --format json',
        'd1 migrations apply DB --remote',
        'deploy',
        D1_EXECUTE,
      ]);
      for (const argv of run.calls) expect(argv.slice(-2)).toEqual(['--env', 'staging']);
      expect(run.stdout).toContain('Found D1 database nft-webhooks-staging (id bbbbbbbb-0000-0000-0000-000000000002).');
      expect(run.stdout).toContain('Found queue nft-webhook-events-staging.');
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

  it('deploys production when no environment is named', () => {
    const run = deploy([], { databases: [], queues: [], secrets: SECRETS });
    expect(run.status, run.all).toBe(0);
    expect(run.calls.find((argv) => argv[0] === 'deploy')).toEqual([
      'deploy',
      '--config',
      run.config,
      '--env',
      'production',
    ]);
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

  it('stops naming WEBHOOK_SECRET_KEY when it is not set: no migration, no deploy', () => {
    const run = deploy(['--env', 'production'], { databases: [], queues: [], secrets: ['JWT_SECRET'] });
    expect(run.status, run.all).toBe(1);
    expect(run.stderr).toContain('required secrets of nft-webhook-api-production are not set');
    expect(run.stderr).toContain(
      'WEBHOOK_SECRET_KEY: openssl rand -base64 32 | npx wrangler secret put WEBHOOK_SECRET_KEY --env production',
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
      'openssl rand -base64 32 | npx wrangler secret put WEBHOOK_SECRET_KEY --env production',
    );
    expect(run.stderr).toContain('npx wrangler secret put JWT_SECRET --env production');
    expect(run.steps).not.toContain('deploy');
  });

  it('stops when wrangler.toml names another database id than the account has, or one it does not have', () => {
    const toml = original.replace(
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
    const run = deploy(['production'], before, original.replace(PLACEHOLDER, 'aaaaaaaa-0000-0000-0000-000000000001'));
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
    const run = deploy(['production'], account({ old: empty }));
    expect(run.status, run.all).toBe(0);
    expect(run.steps).toEqual([
      'd1 list --json',
      D1_EXECUTE,
      D1_EXECUTE,
      'queues info nft-webhook-events',
      'secret list --format json',
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
