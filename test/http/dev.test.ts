// `npm start`'s wrapper around `wrangler dev` (scripts/dev.mjs), with wrangler replaced at the
// process boundary (DEV_WRANGLER) by a stand-in: an HTTP server on the port it is given that
// records the requests it gets, and writes to stderr what workerd writes for a failed DNS lookup.
// What is checked: the Cron Trigger is called while it runs (the endpoint itself is tested
// against the real `wrangler dev` in deliveries.test.ts), workerd's DNS-failure blocks are left
// out and nothing else is, and Ctrl-C (SIGINT) stops wrangler and the wrapper. Then with the real
// wrangler: what a developer sees as it starts.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { unstable_readConfig } from 'wrangler';
import { until } from './receiver';
import { freePort, writeDevVars } from './wrangler-dev';

const root = new URL('../..', import.meta.url).pathname;
const folder = mkdtempSync(join(tmpdir(), 'nft-webhook-dev-'));
let child: ChildProcess | undefined;
let real: ChildProcess | undefined;
afterAll(() => {
  if (child?.exitCode === null) child.kill('SIGKILL');
  // The real wrangler's whole process group (wrangler, workerd).
  if (real?.pid !== undefined && real.exitCode === null && real.signalCode === null) process.kill(-real.pid, 'SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

const SECRET = 'a-secret-for-this-test-only-0123456789';
const STACK = `  stack: ${Array.from({ length: 16 }, (_, i) => `/x/workerd@51f5${i}be`).join(' ')}; sentryErrorContext = jsgInternalError; wdErrId = `;
const dnsBlock = (id: string) =>
  `\x1b[31m✘ \x1b[41;31m[\x1b[41;97mERROR\x1b[41;31m]\x1b[0m \x1b[1me = kj/async-io-unix.c++:1298: failed: DNS lookup failed.; params.host = demo-app-1.example; params.service = ; gai_strerror(status) = Name or service not known\x1b[0m\n\n${STACK}${id}\n\n\n`;
const FAKE = `#!/usr/bin/env node
const fs = require('node:fs');
const http = require('node:http');
const log = (line) => fs.appendFileSync(process.env.FAKE_LOG, line + '\\n');
const argv = process.argv.slice(2);
log('argv ' + JSON.stringify(argv));
const port = Number(argv[argv.indexOf('--port') + 1]);
const server = http.createServer((req, res) => {
  log('GET ' + req.url);
  res.end('Ran scheduled event');
});
server.listen(port, 'localhost', () => {
  console.log('[wrangler:info] Ready on http://localhost:' + port);
  process.stderr.write(${JSON.stringify(dnsBlock('aaa'))} + ${JSON.stringify(dnsBlock('bbb'))} + ${JSON.stringify(dnsBlock('ccc'))});
  console.log('{"level":"info","msg":"delivery attempt","error":"connection"}');
  process.stderr.write('\\x1b[31m✘ [ERROR]\\x1b[0m Uncaught Error: internal error; reference = bbb \\n\\n\\n');
  process.stderr.write('✘ [ERROR] Uncaught Error: internal error; reference = zzz \\n');
  process.stderr.write('✘ [ERROR] something else went wrong\\n');
});
process.on('SIGINT', () => {
  log('SIGINT');
  server.close();
  process.exit(0);
});
`;

describe('npm start (scripts/dev.mjs)', () => {
  it('runs the Cron Trigger while wrangler dev runs, drops only workerd’s DNS-failure blocks, and stops on Ctrl-C', async () => {
    const fake = join(folder, 'wrangler');
    writeFileSync(fake, FAKE);
    chmodSync(fake, 0o755);
    const log = join(folder, 'calls.log');
    writeFileSync(log, '');
    const port = await freePort();
    let stdout = '';
    let stderr = '';
    child = spawn('node', ['scripts/dev.mjs', '--port', String(port), '--local'], {
      cwd: root,
      env: {
        ...process.env,
        DEV_WRANGLER: fake,
        FAKE_LOG: log,
        DEV_CRON_INTERVAL_SECONDS: '1',
        JWT_SECRET: SECRET,
        JWT_ISSUER: '',
        JWT_AUDIENCE: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const calls = () => readFileSync(log, 'utf8').split('\n');
    const scheduled = () => calls().filter((l) => l.startsWith('GET /__scheduled')).length;
    await until(
      () => `two Cron Trigger calls:\n${calls().join('\n')}\n${stdout}\n${stderr}`,
      () => scheduled() >= 2,
    );
    expect(calls()[0]).toBe(`argv ${JSON.stringify(['dev', '--test-scheduled', '--port', String(port), '--local'])}`);
    expect(calls()).toContain('GET /__scheduled?cron=*%20*%20*%20*%20*');
    expect(stdout).toContain('[npm start] the Cron Trigger runs every 1 s');
    expect(stdout).toContain('"msg":"delivery attempt"');
    // Once the service answers: a link that opens the demo application's portal, signed with JWT_SECRET.
    await until(
      () => `the portal link:\n${stdout}`,
      () => stdout.includes('#token='),
    );
    expect(calls()).toContain('GET /portal/');
    const link = new RegExp(
      `^\\[npm start\\] the portal of demo-app-1 \\(valid 30 minutes; npm run portal -- demo-app-1 prints another\\): http://localhost:${port}/portal/#token=(\\S+)$`,
      'm',
    ).exec(stdout);
    expect(link, stdout).not.toBeNull();
    const { payload } = await jwtVerify(link![1]!, new TextEncoder().encode(SECRET));
    expect(payload.sub).toBe('demo-app-1');
    expect(payload.exp! - payload.iat!).toBe(1800);
    // workerd's blocks, and the Uncaught Error naming one of them, are gone; other errors stay.
    await until(
      () => `the other errors:\n${stderr}`,
      () => stderr.includes('something else went wrong'),
    );
    expect(stderr).not.toContain('DNS lookup failed');
    expect(stderr).not.toContain('stack:');
    expect(stderr).not.toContain('reference = bbb');
    expect(stderr).toContain('Uncaught Error: internal error; reference = zzz');
    expect(stderr).toContain('✘ [ERROR] something else went wrong');

    const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(calls()).toContain('SIGINT');
    // No call after it stopped.
    const made = scheduled();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(scheduled()).toBe(made);
  });

  it('is what npm start runs, once the local setup is done, at the start of every minute by default', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.scripts.start).toBe('node scripts/local-setup.mjs && node scripts/dev.mjs');
    const source = readFileSync(join(root, 'scripts/dev.mjs'), 'utf8');
    expect(source).toContain('Number(process.env.DEV_CRON_INTERVAL_SECONDS ?? 60) * 1000');
    expect(source).toContain("const CRON = '* * * * *';");
  });
});

describe('npm start (scripts/dev.mjs) with the real wrangler dev', () => {
  it('prints no stack trace as it starts offline or online, asks Cloudflare for nothing, and builds the portal at most once', async () => {
    const persistTo = join(folder, 'state');
    const envFile = join(folder, 'real.vars');
    writeDevVars(envFile, {
      JWT_SECRET: SECRET,
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_URL_ALLOWED_ORIGINS: '',
    });
    // Where miniflare would keep the Request.cf object it fetched from workers.cloudflare.com.
    const cache = join(folder, 'miniflare-cache');
    mkdirSync(cache);
    const [port, inspector] = [await freePort(), await freePort()];
    let output = '';
    // As a developer's shell has it: without vitest's NODE_ENV=test (with which miniflare fetches nothing).
    const { NODE_ENV: _, ...developer } = process.env;
    real = spawn(
      'node',
      [
        'scripts/dev.mjs',
        '--ip',
        '127.0.0.1',
        '--port',
        String(port),
        '--inspector-port',
        String(inspector),
        '--persist-to',
        persistTo,
        '--env-file',
        envFile,
        '--show-interactive-dev-session=false',
      ],
      {
        cwd: root,
        // No Cron Trigger call while it runs: this database has no tables.
        env: { ...developer, JWT_SECRET: SECRET, MINIFLARE_CACHE_DIR: cache, DEV_CRON_INTERVAL_SECONDS: '3600' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    for (const stream of [real.stdout, real.stderr]) {
      stream?.on('data', (c: Buffer) => {
        output += c.toString();
      });
    }
    // Started, and answering: the portal link is printed once /portal/ answers.
    await until(
      () => `the portal link:\n${output}`,
      () => output.includes('[npm start] the portal of demo-app-1'),
      120_000,
      250,
    );
    const exited = new Promise((resolve) => real?.once('exit', resolve));
    process.kill(-(real.pid as number), 'SIGINT');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);

    const lines = output.split('\n');
    expect(
      lines.filter((l) => /^\s+at \S/.test(l)),
      output,
    ).toEqual([]);
    expect(output).not.toContain('Unable to fetch the `Request.cf` object');
    expect(existsSync(join(cache, 'cf.json')), 'a Request.cf fetched from Cloudflare').toBe(false);
    // wrangler runs the [build] command as it starts (twice: for the entry, and when its watcher
    // is ready); esbuild builds the portal at most once of those.
    const runs = lines.filter((l) => l.includes('Running: node scripts/build-portal.mjs')).length;
    const unchanged = lines.filter((l) => l.includes('Portal unchanged since its last build')).length;
    expect(runs, output).toBeGreaterThanOrEqual(1);
    expect(runs - unchanged, output).toBeLessThanOrEqual(1);
  }, 180_000);
});

describe('.dev.vars.example', () => {
  const example = readFileSync(join(root, '.dev.vars.example'), 'utf8');
  const vars = unstable_readConfig({ config: join(root, 'wrangler.toml') }, { hideWarnings: true }).vars as Record<
    string,
    string
  >;

  it('lists every setting of wrangler.toml [vars], and the secrets', () => {
    const names = [...Object.keys(vars), 'JWT_SECRET', 'JWT_PUBLIC_KEY', 'WEBHOOK_SECRET_KEY'];
    for (const name of names) expect(example, name).toMatch(new RegExp(`^(# )?${name}=`, 'm'));
  });

  it('overrides no local [vars] value with another (a line set there wins over wrangler.toml)', () => {
    for (const [, name, value] of example.matchAll(/^([A-Z_]+)=(.*)$/gm)) {
      if (name !== undefined && name in vars) expect([vars[name], ''], name).toContain(value);
    }
    // The ones whose local value matters are shown with it, commented out.
    for (const name of Object.keys(vars).filter((n) => /^(DELIVERY_|AUTO_|WEBHOOK_URL)/.test(n))) {
      expect(example).toContain(`# ${name}=${vars[name]}`);
    }
  });
});
