// The helpers people run by hand: `npm run receiver` (examples/receiver.mjs), `npm run token`
// (scripts/token.mjs), `npm start`'s local setup (scripts/local-setup.mjs), run as processes.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { until } from './receiver';
import { freePort } from './wrangler-dev';

const root = new URL('../..', import.meta.url).pathname;
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

let receiver: ChildProcess | undefined;
afterEach(() => {
  if (receiver?.exitCode === null) receiver.kill('SIGKILL');
});

/** Starts the receiver with `args` and `env`; its output so far, as a getter. */
async function startReceiver(args: string[], env: Record<string, string>) {
  const port = await freePort();
  let output = '';
  const { WEBHOOK_SECRET: _, ...inherited } = process.env;
  receiver = spawn('node', ['examples/receiver.mjs', '--port', String(port), ...args], {
    cwd: root,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  receiver.stdout?.on('data', (c: Buffer) => {
    output += c.toString();
  });
  receiver.stderr?.on('data', (c: Buffer) => {
    output += c.toString();
  });
  await until(
    () => `the receiver to listen:\n${output}`,
    () => output.includes(`Receiver listening on http://127.0.0.1:${port}`),
  );
  return { port, output: () => output };
}

/** POSTs `body` with Standard Webhooks headers signed by each of `secrets`, in that order. */
async function send(
  port: number,
  body: string,
  secrets: string[],
  id = `evt_${randomBytes(8).toString('hex')}`,
  path = '/nft-events',
) {
  const at = new Date();
  const signature = secrets.map((s) => new Webhook(s).sign(id, at, body)).join(' ');
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
    },
    body,
  });
  return { status: res.status, id };
}

describe('npm run receiver', () => {
  it('takes its secrets from WEBHOOK_SECRET, says so first, and shows which secret verified each signature', async () => {
    const [previous, current] = [newSecret(), newSecret()];
    const { port, output } = await startReceiver([], { WEBHOOK_SECRET: `${current} ${previous}` });
    expect(output().split('\n')[0]).toBe('Secrets from WEBHOOK_SECRET: secret#1, secret#2.');
    expect(output()).not.toContain('command line');
    expect(output()).not.toContain(current);

    // During a rotation: the new secret's signature first, then the previous one's. Both verify.
    const both = await send(port, '{"type":"NEW_NFT"}', [current, previous]);
    expect(both.status).toBe(204);
    await until(
      () => `the rotation line:\n${output()}`,
      () => output().includes(`webhook-id=${both.id} `),
    );
    expect(output()).toContain(
      `VERIFIED POST /nft-events webhook-id=${both.id} signatures: #1 secret#1, #2 secret#2\n  {"type":"NEW_NFT"}`,
    );
    // A signature no secret verifies is shown as such beside one that does.
    const stranger = await send(port, '{}', [newSecret(), previous]);
    await until(
      () => `the second line:\n${output()}`,
      () => output().includes(`webhook-id=${stranger.id} `),
    );
    expect(output()).toContain(`webhook-id=${stranger.id} signatures: #1 no secret, #2 secret#2`);
    // None verifies: refused.
    const refused = await send(port, '{}', [newSecret()]);
    expect(refused.status).toBe(401);
    await until(
      () => `the refusal:\n${output()}`,
      () => output().includes(`REFUSED POST /nft-events: signature does not verify (webhook-id ${refused.id})`),
    );
  });

  it('takes --secret too, and says first that npm printed it', async () => {
    const secret = newSecret();
    const { port, output } = await startReceiver(['--secret', secret], {});
    expect(output().split('\n')[0]).toBe(
      'Secrets from the command line: secret#1 (npm printed it above, secret included: prefer WEBHOOK_SECRET=... npm run receiver).',
    );
    const { status, id } = await send(port, '{}', [secret]);
    expect(status).toBe(204);
    await until(
      () => `the line:\n${output()}`,
      () => output().includes(`webhook-id=${id} signatures: #1 secret#1`),
    );
  });

  it('answers --status with that status, and --delay seconds late (a slow receiver), as the README failure modes run it', async () => {
    const secret = newSecret();
    const failing = await startReceiver(['--status', '500'], { WEBHOOK_SECRET: secret });
    expect(failing.output()).toContain('(answers 500)');
    expect((await send(failing.port, '{}', [secret])).status).toBe(500);
    receiver?.kill('SIGKILL');
    const slow = await startReceiver(['--delay', '2'], { WEBHOOK_SECRET: secret });
    expect(slow.output()).toContain('(answers 204 after 2 s)');
    const started = Date.now();
    expect((await send(slow.port, '{}', [secret])).status).toBe(204);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
  });

  it('answers --status only at the --only path, 204 elsewhere (one receiver for a failing webhook and a listening one)', async () => {
    const secret = newSecret();
    const { port, output } = await startReceiver(['--status', '410', '--only', '/gone'], { WEBHOOK_SECRET: secret });
    expect(output()).toContain('(answers 410 at /gone, 204 elsewhere)');
    expect((await send(port, '{}', [secret], undefined, '/gone')).status).toBe(410);
    expect((await send(port, '{}', [secret])).status).toBe(204);
    // A path must start with /.
    const { WEBHOOK_SECRET: _, ...env } = process.env;
    const bad = spawnSync('node', ['examples/receiver.mjs', '--only', 'gone'], {
      cwd: root,
      env: { ...env, WEBHOOK_SECRET: secret },
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
  });

  it('prints its usage for --help and without a secret', () => {
    const { WEBHOOK_SECRET: _, ...env } = process.env;
    const help = spawnSync('node', ['examples/receiver.mjs', '--help'], { cwd: root, env, encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: WEBHOOK_SECRET=whsec_... npm run receiver');
    const none = spawnSync('node', ['examples/receiver.mjs'], { cwd: root, env, encoding: 'utf8' });
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('Usage: WEBHOOK_SECRET=whsec_... npm run receiver');
  });
});

describe("npm start's local setup (scripts/local-setup.mjs)", () => {
  // A copy of the repository's scripts, migrations and .dev.vars.example, with wrangler replaced
  // at the process boundary (node_modules/.bin) by a stand-in that records its arguments and
  // answers the post-deploy script's reads: what is checked is .dev.vars, not D1.
  const FAKE = `const fs = require('node:fs');
fs.appendFileSync(process.env.FAKE_LOG, JSON.stringify(process.argv.slice(2)) + '\\n');
if (process.argv.includes('--json')) process.stdout.write('[{"results":[]},{"results":[]}]');
`;
  const KEY = randomBytes(32).toString('base64');

  /** Runs the setup in a fresh copy whose .dev.vars is `devVars` (none: undefined); what it printed and left. */
  function setup(devVars: string | undefined) {
    const copy = mkdtempSync(join(tmpdir(), 'nft-webhook-setup-'));
    try {
      for (const entry of ['scripts', 'migrations', '.dev.vars.example', 'package.json'])
        cpSync(join(root, entry), join(copy, entry), { recursive: true });
      mkdirSync(join(copy, 'node_modules', '.bin'), { recursive: true });
      const fake = join(copy, 'node_modules', '.bin', 'wrangler');
      writeFileSync(fake, `#!/usr/bin/env node\n${FAKE}`);
      chmodSync(fake, 0o755);
      writeFileSync(join(copy, 'node_modules', 'package.json'), '{"type":"commonjs"}');
      const file = join(copy, '.dev.vars');
      if (devVars !== undefined) writeFileSync(file, devVars, { mode: 0o600 });
      const log = join(copy, 'calls.log');
      const run = spawnSync(process.execPath, ['scripts/local-setup.mjs'], {
        cwd: copy,
        encoding: 'utf8',
        env: { ...process.env, FAKE_LOG: log },
      });
      expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
      const calls = readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as string[]);
      expect(calls[0]).toEqual(['d1', 'migrations', 'apply', 'DB', '--local']);
      expect(calls.at(-1)).toEqual(['d1', 'execute', 'DB', '--local', '--file', 'scripts/seed.sql']);
      return {
        stdout: run.stdout,
        devVars: existsSync(file) ? readFileSync(file, 'utf8') : undefined,
        mode: existsSync(file) ? statSync(file).mode & 0o777 : undefined,
      };
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  }
  const keyOf = (devVars = '') => /^WEBHOOK_SECRET_KEY=(.*)$/m.exec(devVars)?.[1];

  it.each([
    ['a key ring alone (WEBHOOK_SECRET_KEYS, after a rotation)', `JWT_SECRET=x\nWEBHOOK_SECRET_KEYS=local-2:${KEY}\n`],
    [
      'a key ring beside an empty WEBHOOK_SECRET_KEY',
      `JWT_SECRET=x\nWEBHOOK_SECRET_KEY=\nWEBHOOK_SECRET_KEYS="local-2:${KEY}"\n`,
    ],
    ['WEBHOOK_SECRET_KEY', `JWT_SECRET=x\nWEBHOOK_SECRET_KEY=${KEY}\n`],
    ['both', `JWT_SECRET=x\nWEBHOOK_SECRET_KEYS=local-2:${KEY} default:${KEY}\nWEBHOOK_SECRET_KEY=${KEY}\n`],
  ])('leaves a .dev.vars with %s as it is', (_, devVars) => {
    const after = setup(devVars);
    expect(after.devVars).toBe(devVars);
    expect(after.stdout).not.toContain('WEBHOOK_SECRET_KEY');
  });

  it.each([
    ['no key at all', 'JWT_SECRET=x\n'],
    ['an empty WEBHOOK_SECRET_KEY and an empty ring', 'JWT_SECRET=x\nWEBHOOK_SECRET_KEY=\nWEBHOOK_SECRET_KEYS=\n'],
  ])('adds a random WEBHOOK_SECRET_KEY to a .dev.vars with %s, and changes nothing else', (_, devVars) => {
    const after = setup(devVars);
    expect(after.stdout).toContain('Added a random WEBHOOK_SECRET_KEY to .dev.vars.');
    expect(after.devVars?.startsWith(devVars)).toBe(true);
    const added = (after.devVars as string).slice(devVars.length);
    expect(added).toMatch(/^\n# [^\n]+\nWEBHOOK_SECRET_KEY=[A-Za-z0-9+/]{43}=\n$/);
    expect(Buffer.from(keyOf(added) as string, 'base64')).toHaveLength(32);
  });

  it('creates a missing .dev.vars from .dev.vars.example, with a random JWT_SECRET and WEBHOOK_SECRET_KEY, readable by its owner only', () => {
    const after = setup(undefined);
    expect(after.stdout).toContain('Created .dev.vars with a random JWT_SECRET and WEBHOOK_SECRET_KEY.');
    expect(after.mode).toBe(0o600);
    expect(after.devVars).toMatch(/^JWT_SECRET=[\w-]{64}$/m);
    expect(Buffer.from(keyOf(after.devVars) as string, 'base64')).toHaveLength(32);
    expect(after.devVars).not.toMatch(/^WEBHOOK_SECRET_KEYS=/m);
  });
});

describe('npm run build:portal (scripts/build-portal.mjs, the [build] command)', () => {
  it('builds only when a file the last build read has changed, or a file it wrote is gone', () => {
    // A copy of what the build reads, its files' times kept (a file changed in the second before
    // a build is read again next time), node_modules shared.
    const copy = mkdtempSync(join(tmpdir(), 'nft-webhook-portal-build-'));
    try {
      for (const entry of ['portal', 'src/core', 'scripts/build-portal.mjs'])
        cpSync(join(root, entry), join(copy, entry), { recursive: true, preserveTimestamps: true });
      symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
      const out = join(copy, 'build', 'assets', 'portal');
      const build = () => {
        const run = spawnSync(process.execPath, ['scripts/build-portal.mjs'], { cwd: copy, encoding: 'utf8' });
        expect(run.status, run.stderr).toBe(0);
        return run.stdout.trim();
      };
      const files = () => Object.fromEntries(readdirSync(out).map((f) => [f, statSync(join(out, f)).mtimeMs]));
      const BUILT = 'Portal built into build/assets/portal.';
      const KEPT = 'Portal unchanged since its last build: build/assets/portal kept as it is.';
      /** Changes `file` as an editor would have a while ago. */
      const edit = (file: string, change: (text: string) => string) => {
        const path = join(copy, file);
        writeFileSync(path, change(readFileSync(path, 'utf8')));
        const past = new Date(Date.now() - 60_000);
        utimesSync(path, past, past);
      };

      expect(build()).toBe(BUILT);
      const first = files();
      expect(Object.keys(first).sort()).toEqual([
        expect.stringMatching(/^app-[\w-]{10}\.js$/),
        'index.html',
        expect.stringMatching(/^style-[\w-]{10}\.css$/),
      ]);
      expect(build()).toBe(KEPT);
      expect(files()).toEqual(first);

      // A module of the service the portal imports: read again.
      edit('src/core/scopes.ts', (t) => `${t}\nexport const ADDED_FOR_THIS_TEST = 'added';\n`);
      expect(build()).toBe(BUILT);
      expect(build()).toBe(KEPT);
      // The page's HTML: read again, and served as changed.
      edit('portal/index.html', (t) => t.replace('</head>', '<meta name="x-test" content="1"></head>'));
      expect(build()).toBe(BUILT);
      expect(readFileSync(join(out, 'index.html'), 'utf8')).toContain('<meta name="x-test" content="1">');
      // A file it wrote, gone: written again.
      const script = Object.keys(files()).find((f) => f.startsWith('app-')) as string;
      rmSync(join(out, script));
      expect(build()).toBe(BUILT);
      expect(existsSync(join(out, script))).toBe(true);
      expect(build()).toBe(KEPT);
      // A file changed in the second before the build: built, and built again next time.
      writeFileSync(
        join(copy, 'portal/src/style.css'),
        `${readFileSync(join(copy, 'portal/src/style.css'), 'utf8')}\n`,
      );
      expect(build()).toBe(BUILT);
      expect(build()).toBe(BUILT);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});

describe('npm run portal', () => {
  const env = { ...process.env, JWT_SECRET: 'a-secret-for-this-test-only-0123456789' };
  it.each([['--help'], ['-h'], ['demo-app-1', '--help']])(
    'prints its usage for %s (through npm, as the README runs it), not a link',
    (...args) => {
      const run = spawnSync('npm', ['run', '-s', 'portal', '--', ...args], { cwd: root, encoding: 'utf8', env });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain('Usage: npm run portal -- <app_id> [--read-only] [--ttl <seconds>] [--base <url>]');
      expect(run.stdout).not.toContain('#token=');
    },
  );

  it('refuses an option it does not know (exit 2), and prints a link for an application', () => {
    const bad = spawnSync('node', ['scripts/portal-link.mjs', '--nope'], { cwd: root, encoding: 'utf8', env });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('Usage: npm run portal');
    expect(bad.stdout).toBe('');
    const link = spawnSync('node', ['scripts/portal-link.mjs', 'demo-app-1'], { cwd: root, encoding: 'utf8', env });
    expect(link.stdout).toMatch(/^http:\/\/localhost:8787\/portal\/#token=[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const [, payload] = link.stdout.split('#token=')[1]!.split('.');
    expect(JSON.parse(Buffer.from(payload!, 'base64url').toString()).sub).toBe('demo-app-1');
  });
});

describe('npm run token', () => {
  const token = (...args: string[]) =>
    spawnSync('node', ['scripts/token.mjs', ...args], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, JWT_SECRET: 'a-secret-for-this-test-only-0123456789' },
    });

  it.each([['--help'], ['-h'], ['demo-app-1', '--help']])('prints the usage for %s, not a token', (...args) => {
    const run = token(...args);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: npm run token -- <app_id> [--ttl <seconds>] [--jti <id>] [--scope <scopes>]');
    expect(run.stdout).not.toMatch(/^ey/m);
  });

  it.each([['--nope'], ['demo-app-1', '--scope'], ['demo-app-1', 'extra'], []])(
    'refuses %j with the usage (exit 2)',
    (...args) => {
      const run = token(...args);
      expect(run.status).toBe(2);
      expect(run.stderr).toContain('Usage: npm run token');
      expect(run.stdout).toBe('');
    },
  );

  it('prints a token for an application', () => {
    const run = token('demo-app-1', '--scope', 'events:publish', '--ttl', '60');
    expect(run.status).toBe(0);
    const [, payload] = run.stdout.trim().split('.');
    expect(JSON.parse(Buffer.from(payload as string, 'base64url').toString())).toMatchObject({
      sub: 'demo-app-1',
      scope: 'events:publish',
    });
  });
});

describe('examples/curl.sh', () => {
  it('runs every call against wrangler dev, and makes the retry and the repeat its comments promise', () => {
    const run = spawnSync('bash', ['examples/curl.sh'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        ...process.env,
        BASE_URL: inject('baseUrl'),
        JWT_SECRET: inject('secret'),
        JWT_APP_CLAIM: 'sub',
        JWT_ISSUER: '',
        JWT_AUDIENCE: '',
      },
    });
    expect(run.status, run.stderr).toBe(0);
    const replies = run.stdout.split(/^(?=# )/m);
    const reply = (comment: string) => replies.find((r) => r.startsWith(`# ${comment}`)) ?? '';
    const first = reply('Register a webhook');
    const retry = reply('Retry it with the same Idempotency-Key');
    expect(first).toMatch(/^HTTP\/1\.1 201 Created/m);
    expect(retry).toMatch(/^HTTP\/1\.1 201 Created/m);
    expect(retry).toMatch(/^idempotent-replayed: true/im);
    const id = (text: string) => /"webhook_id":(\d+)/.exec(text)?.[1];
    expect(id(retry)).toBe(id(first));
    const deletes = reply('Delete it, then repeat the delete').match(/^HTTP\/1\.1 200 OK/gm);
    expect(deletes).toHaveLength(2);
    expect(reply('Its delivery log')).toMatch(/^HTTP\/1\.1 202 Accepted/m);
    const filter = reply('A content filter');
    expect(filter).toContain('"filter":{"data.token_id":{"$in_set":true}}');
    expect(filter).toMatch(/"value":\{"webhook_id":\d+,"count":2\}/);
    expect(filter).toContain('"values":["42","43"],"count":2,"next_cursor":null');
    expect(filter).toContain('"value":{"matches":true}');
    const admin = reply("The platform's administration");
    expect(admin).toContain('"value":{"app_id":"demo-app-1","retention_days":90,"default":false,"erased":false}');
    expect(admin).toMatch(/^HTTP\/1\.1 202 Accepted/m);
    expect(run.stdout).not.toMatch(/^HTTP\/1\.1 [45]\d\d/m);
  });
});
