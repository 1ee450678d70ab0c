// Global setup of the `http` test project: the real Worker under `wrangler dev`, on a free
// loopback port, with a local D1 of its own (in a temporary folder) made by the real migrations
// (the post-deploy ones included) and seeded like `npm start`'s, its local queues and its Cron Trigger (run on request). Webhooks
// may point at four local receivers: those the tests start on `receiverPort`, `portalReceiverPort`
// and `liveReceiverPort` (free, chosen here, before wrangler starts), and the README's
// `npm run receiver` on 8790. Everything it starts is stopped in
// teardown.
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
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
    /** A free loopback port whose origin webhooks may point at: a test's own receiver listens there. */
    receiverPort: number;
    /** Another such port, for the portal's browser tests (test files run at once: one receiver each). */
    portalReceiverPort: number;
    /** A third, for the browser tests of live deliveries. */
    liveReceiverPort: number;
    /** A fourth, for the browser tests of destinations and custom headers. */
    destinationsReceiverPort: number;
  }
}

const root = new URL('../..', import.meta.url).pathname;

/** The port of the README's receiver (`npm run receiver`), which the walkthrough test starts. */
export const README_RECEIVER_PORT = 8790;

/** The delivery settings of the Worker under test: short, so retries and timeouts happen within a test. */
export const DELIVERY = {
  /** Seconds to wait after failed attempt 1, 2, 3: four attempts at most. */
  retrySchedule: '1s 1s 1s',
  timeoutSeconds: 2,
} as const;

export const freePort = () =>
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

/**
 * Runs wrangler to completion without blocking this process: for a test whose own servers (a
 * webhook receiver) must keep answering meanwhile.
 */
export function wranglerAsync(args: string[], cwd = root): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'npx',
      ['--no-install', 'wrangler', ...args],
      {
        cwd,
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' },
      },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`wrangler ${args.join(' ')} failed:\n${stdout}\n${stderr}`));
        else resolve(stdout);
      },
    ).stdin?.end();
  });
}

/**
 * Brings the local D1 in `persistTo` to this tree's schema as `npm start` does: the migrations,
 * then the post-deploy ones (scripts/post-deploy.mjs). Returns what the migrations printed.
 */
export async function migrateLocal(persistTo: string): Promise<string> {
  const made = await wranglerAsync(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', persistTo]);
  return made + (await postDeployLocal(persistTo));
}

/** The post-deploy migrations applied to the local D1 in `persistTo`; what the script printed. */
export const postDeployLocal = (persistTo: string) =>
  new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['scripts/post-deploy.mjs', '--local', '--persist-to', persistTo],
      { cwd: root, encoding: 'utf8', env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' } },
      (err, stdout, stderr) => (err ? reject(new Error(`post-deploy failed:\n${stdout}\n${stderr}`)) : resolve(stdout)),
    ).stdin?.end();
  });

/** A `wrangler dev` this process started, and how to stop it. */
export interface Dev {
  /** e.g. http://127.0.0.1:41234 */
  baseUrl: string;
  /** Stops its whole process group (wrangler and workerd): SIGTERM, then SIGKILL after 5 s. */
  stop(): Promise<void>;
}

/**
 * Starts `wrangler dev` in `cwd` (its wrangler.toml) on a free loopback port, with the local state
 * in `persistTo` and the settings of `envFile` only; resolves once it is ready. Its output goes to
 * `logFile` when given.
 */
export async function startWranglerDev(options: {
  cwd: string;
  persistTo: string;
  envFile: string;
  logFile?: string;
}): Promise<Dev> {
  const port = await freePort();
  const inspector = await freePort();
  const child: ChildProcess = spawn(
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
      options.persistTo,
      '--env-file',
      options.envFile,
      '--show-interactive-dev-session=false',
      // The Cron Trigger on request, at /__scheduled: wrangler's /cdn-cgi/handler/scheduled answers
      // 500 for a Worker with static assets (the portal) before wrangler 4.99 (Node 22).
      '--test-scheduled',
    ],
    {
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so stopping it stops wrangler and workerd together.
      detached: true,
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
    },
  );
  /** Signals the whole process group, if it still runs. */
  const signal = (name: NodeJS.Signals) => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, name);
    } catch {
      // The group is gone already.
    }
  };
  // Should this process end without stopping it (killed, or its output pipe closed), wrangler dev
  // goes with it.
  const onExit = () => signal('SIGKILL');
  process.once('exit', onExit);
  // Output that arrives once stopping has begun is not written: its log file may be gone by then.
  let stopping = false;
  const stop = async () => {
    stopping = true;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      signal('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      signal('SIGKILL');
    }
    process.off('exit', onExit);
  };
  let output = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`wrangler dev did not start:\n${output}`)), 60_000);
      const watch = (chunk: Buffer) => {
        output += chunk.toString();
        if (options.logFile !== undefined && !stopping) writeFileSync(options.logFile, output);
        if (output.includes('Ready on')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on('data', watch);
      child.stderr?.on('data', watch);
      child.once('exit', (code) => reject(new Error(`wrangler dev exited (${code}):\n${output}`)));
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { baseUrl: `http://127.0.0.1:${port}`, stop };
}

/**
 * Writes the settings file of a Worker under test: every setting given (`settings` over the test
 * defaults: DELIVERY's timings, the Worker's defaults for the rest), so a developer's .dev.vars
 * cannot change a test. JWT_SECRET, WEBHOOK_SECRET_KEY and WEBHOOK_URL_ALLOWED_ORIGINS are the caller's.
 */
export function writeDevVars(
  file: string,
  settings: { JWT_SECRET: string; WEBHOOK_SECRET_KEY: string; WEBHOOK_URL_ALLOWED_ORIGINS: string } & Record<
    string,
    string
  >,
) {
  const all: Record<string, string> = {
    ...Object.fromEntries(
      ['JWT_PUBLIC_KEY', 'JWT_JWKS_URL', 'JWT_ALGORITHMS', 'JWT_ISSUER', 'JWT_AUDIENCE', 'JWT_TYP'].map((k) => [k, '']),
    ),
    JWT_APP_CLAIM: 'sub',
    WEBHOOKS_PER_APP: '',
    DELIVERY_RETRY_SCHEDULE: DELIVERY.retrySchedule,
    DELIVERY_TIMEOUT_SECONDS: String(DELIVERY.timeoutSeconds),
    // Empty: the Worker's defaults (120 hours, 30 days).
    AUTO_DISABLE_AFTER_HOURS: '',
    DELIVERY_RETENTION_DAYS: '',
    PORTAL_FRAME_ANCESTORS: '',
    ...settings,
  };
  writeFileSync(
    file,
    `${Object.entries(all)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join('\n')}\n`,
  );
}

/**
 * A Worker of this tree a test starts for itself, with settings of its own: a local D1 made by the
 * migrations in `folder`/state, its settings file, its log; `start()` again runs it on the same
 * state (after `stop()`). The JWT secret and WEBHOOK_SECRET_KEY are new; `origins` are the
 * allowed receiver origins.
 */
export function ownWorker(folder: string, origins: string[], settings: Record<string, string>) {
  const persistTo = join(folder, 'state');
  const envFile = join(folder, 'own.vars');
  const secret = randomBytes(32).toString('base64url');
  writeDevVars(envFile, {
    JWT_SECRET: secret,
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_URL_ALLOWED_ORIGINS: origins.join(' '),
    ...settings,
  });
  let migrated = false;
  let runs = 0;
  return {
    secret,
    persistTo,
    async start(): Promise<Dev> {
      if (!migrated) await migrateLocal(persistTo);
      migrated = true;
      runs += 1;
      return startWranglerDev({ cwd: root, persistTo, envFile, logFile: join(folder, `wrangler-dev-${runs}.log`) });
    },
  };
}

let dev: Dev | undefined;
let folder: string | undefined;

export default async function setup(project: TestProject) {
  folder = mkdtempSync(join(tmpdir(), 'nft-webhook-http-'));
  const persistTo = join(folder, 'state');
  const secret = randomBytes(32).toString('base64url');
  const receiverPort = await freePort();
  const portalReceiverPort = await freePort();
  const liveReceiverPort = await freePort();
  const destinationsReceiverPort = await freePort();
  const allowedOrigins = [
    receiverPort,
    portalReceiverPort,
    liveReceiverPort,
    destinationsReceiverPort,
    README_RECEIVER_PORT,
  ]
    .map((p) => `http://127.0.0.1:${p}`)
    .join(' ');
  // Every setting is given here, so a developer's .dev.vars cannot change the tests.
  const envFile = join(folder, 'test.vars');
  writeDevVars(envFile, {
    JWT_SECRET: secret,
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_URL_ALLOWED_ORIGINS: allowedOrigins,
  });
  await migrateLocal(persistTo);
  wrangler(['d1', 'execute', 'DB', '--local', '--persist-to', persistTo, '--file', 'scripts/seed.sql']);

  const logFile = join(folder, 'wrangler-dev.log');
  dev = await startWranglerDev({ cwd: root, persistTo, envFile, logFile });

  project.provide('baseUrl', dev.baseUrl);
  project.provide('secret', secret);
  project.provide('persistTo', persistTo);
  project.provide('logFile', logFile);
  project.provide('receiverPort', receiverPort);
  project.provide('portalReceiverPort', portalReceiverPort);
  project.provide('liveReceiverPort', liveReceiverPort);
  project.provide('destinationsReceiverPort', destinationsReceiverPort);
  return teardown;
}

async function teardown() {
  await dev?.stop();
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
}
