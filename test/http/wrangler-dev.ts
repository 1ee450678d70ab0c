// Global setup of the `http` test project: the real Worker under `wrangler dev`, on a free
// loopback port, with a local D1 of its own (in a temporary folder) made by the real migrations
// and seeded like `npm start`'s. Everything it starts is stopped in teardown.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** e.g. http://127.0.0.1:41234 */
    baseUrl: string;
    /** The HS256 secret the Worker verifies tokens with. */
    secret: string;
    /** The folder wrangler keeps the local D1 in. */
    persistTo: string;
    /** Where the Worker's output is written. */
    logFile: string;
  }
}

const root = new URL('../..', import.meta.url).pathname;

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** Runs wrangler to completion (no prompts: standard input is closed). */
export function wrangler(args: string[], cwd = root): string {
  const run = spawnSync('npx', ['--no-install', 'wrangler', ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' },
  });
  if (run.status !== 0) throw new Error(`wrangler ${args.join(' ')} failed:\n${run.stdout}\n${run.stderr}`);
  return run.stdout;
}

let dev: ChildProcess | undefined;
let folder: string | undefined;

export default async function setup(project: TestProject) {
  folder = mkdtempSync(join(tmpdir(), 'nft-webhook-http-'));
  const persistTo = join(folder, 'state');
  const secret = randomBytes(32).toString('base64url');
  // Every setting is given here, so a developer's .dev.vars cannot change the tests.
  const envFile = join(folder, 'test.vars');
  writeFileSync(
    envFile,
    [
      `JWT_SECRET=${secret}`,
      ...['JWT_PUBLIC_KEY', 'JWT_JWKS_URL', 'JWT_ALGORITHMS', 'JWT_ISSUER', 'JWT_AUDIENCE', 'JWT_TYP'].map(
        (k) => `${k}=`,
      ),
      'JWT_APP_CLAIM=sub',
      'WEBHOOKS_PER_APP=',
      '',
    ].join('\n'),
  );
  wrangler(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', persistTo]);
  wrangler(['d1', 'execute', 'DB', '--local', '--persist-to', persistTo, '--file', 'scripts/seed.sql']);

  const port = await freePort();
  const inspector = await freePort();
  const logFile = join(folder, 'wrangler-dev.log');
  dev = spawn(
    'npx',
    [
      '--no-install',
      'wrangler',
      'dev',
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
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so teardown stops wrangler and workerd together.
      detached: true,
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
    },
  );
  // Should this process end without teardown (killed, or its output pipe closed), wrangler dev
  // goes with it.
  process.once('exit', () => stop('SIGKILL'));
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wrangler dev did not start:\n${output}`)), 60_000);
    const watch = (chunk: Buffer) => {
      output += chunk.toString();
      writeFileSync(logFile, output);
      if (output.includes('Ready on')) {
        clearTimeout(timer);
        resolve();
      }
    };
    dev?.stdout?.on('data', watch);
    dev?.stderr?.on('data', watch);
    dev?.once('exit', (code) => reject(new Error(`wrangler dev exited (${code}):\n${output}`)));
  });
  await ready;

  project.provide('baseUrl', `http://127.0.0.1:${port}`);
  project.provide('secret', secret);
  project.provide('persistTo', persistTo);
  project.provide('logFile', logFile);
  return teardown;
}

/** Signals wrangler dev's whole process group, if it still runs. */
function stop(signal: NodeJS.Signals) {
  if (dev?.pid === undefined || dev.exitCode !== null) return;
  try {
    process.kill(-dev.pid, signal);
  } catch {
    // The group is gone already.
  }
}

async function teardown() {
  if (dev !== undefined && dev.exitCode === null) {
    const exited = new Promise((resolve) => dev?.once('exit', resolve));
    stop('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    stop('SIGKILL');
  }
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
}
