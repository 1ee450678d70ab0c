// `npm start` (after scripts/local-setup.mjs): runs `wrangler dev --test-scheduled` and, while it
// runs, the Cron Trigger at the start of every minute, as production does (`wrangler dev` never
// fires scheduled handlers by itself: this calls its GET /__scheduled; wrangler's usual
// /cdn-cgi/handler/scheduled answers 500 locally for a Worker with static assets, a bug of the
// wrangler this project pins). Arguments go to wrangler dev (`npm start -- --port 8788`). Ctrl-C
// stops both.
//
// workerd reports a failed DNS lookup (the demo webhooks' hosts do not exist) itself: three
// ERROR blocks with a 16-frame native stack per attempt, then `Uncaught Error: internal error`
// naming them. The Worker cannot silence that, so those blocks are left out here; the service's
// own log line for the attempt (`delivery attempt`, `"error":"connection"`) stays. RAW_LOGS=1
// shows wrangler's output untouched.
//
// DEV_WRANGLER names another wrangler executable and DEV_CRON_INTERVAL_SECONDS another interval
// (the tests use both).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { readDevVars } from './dev-vars.mjs';
import { signToken } from './sign-token.mjs';

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i === -1) return undefined;
  return args[i].includes('=') ? args[i].slice(name.length + 1) : args[i + 1];
};
const port = option('--port') ?? '8787';
const host = option('--ip') ?? 'localhost';
const interval = Number(process.env.DEV_CRON_INTERVAL_SECONDS ?? 60) * 1000;
const CRON = '* * * * *';
const say = (line) => console.log(`[npm start] ${line}`);

// wrangler's own bin, run by this node (not through npx and a shell), so that a signal passed on reaches it.
const [command, ...prefix] = process.env.DEV_WRANGLER
  ? [process.env.DEV_WRANGLER]
  : [process.execPath, new URL('../node_modules/wrangler/bin/wrangler.js', import.meta.url).pathname];
const raw = process.env.RAW_LOGS === '1';
const child = spawn(command, [...prefix, 'dev', '--test-scheduled', ...args], {
  stdio: ['inherit', 'inherit', raw ? 'inherit' : 'pipe'],
  env: {
    ...process.env,
    WRANGLER_SEND_METRICS: process.env.WRANGLER_SEND_METRICS ?? 'false',
    // Miniflare fetches a real Request.cf object from workers.cloudflare.com at each start (the
    // Worker reads none of it); offline, that prints a warning with a stack trace, twice. Off, it
    // uses its placeholder at once. Set it to true to have the real one.
    CLOUDFLARE_CF_FETCH_ENABLED: process.env.CLOUDFLARE_CF_FETCH_ENABLED ?? 'false',
  },
});

// ---- wrangler's stderr, without workerd's reports of failed DNS lookups ------------------------
if (!raw) {
  // Without colours (ESC [ ... m).
  const ESC = String.fromCharCode(27);
  const plain = (line) => line.replaceAll(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '');
  const dropped = new Set(); // wdErrIds of the blocks left out
  let skipping = false; // inside a left-out block (its blank lines and its stack line)
  createInterface({ input: child.stderr }).on('line', (line) => {
    const text = plain(line);
    if (/\[ERROR\] e = kj\/[\w./+-]+:\d+: failed: DNS lookup failed\./.test(text)) {
      skipping = true;
      return;
    }
    if (skipping && (text.trim() === '' || /^\s+stack: /.test(text))) {
      const id = /wdErrId = (\w+)/.exec(text)?.[1];
      if (id) dropped.add(id);
      return;
    }
    skipping = false;
    const reference = /\[ERROR\] Uncaught Error: internal error; reference = (\w+)/.exec(text)?.[1];
    if (reference !== undefined && dropped.delete(reference)) {
      skipping = true; // and the blank lines after it
      return;
    }
    process.stderr.write(`${line}\n`);
  });
}

// ---- the Cron Trigger, at the start of every minute --------------------------------------------
const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/__scheduled?cron=${encodeURIComponent(CRON)}`;
let timer;
async function tick() {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    await res.arrayBuffer();
    if (!res.ok) say(`Cron Trigger: ${url} answered ${res.status}`);
  } catch (err) {
    say(`Cron Trigger: could not reach ${url} (${err.cause?.code ?? err.message}); next try in a minute`);
  }
}
function schedule() {
  // On the minute, as `* * * * *` runs in production; a shorter test interval runs from now.
  const wait = interval === 60_000 ? 60_000 - (Date.now() % 60_000) : interval;
  timer = setTimeout(async () => {
    await tick();
    if (timer !== undefined) schedule();
  }, wait);
}
say(
  interval === 60_000
    ? `the Cron Trigger runs at the start of every minute (GET ${url}), as in production.`
    : `the Cron Trigger runs every ${interval / 1000} s (GET ${url}).`,
);
schedule();

// ---- a portal link for the demo application, once the service answers ------------------------------
const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
const DEMO_APP = 'demo-app-1';
async function portalLink() {
  for (let tries = 0; tries < 240 && child.exitCode === null; tries++) {
    try {
      const res = await fetch(`${origin}/portal/`, { signal: AbortSignal.timeout(5_000) });
      await res.arrayBuffer();
      if (res.ok) break;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (child.exitCode !== null || !{ ...readDevVars(), ...process.env }.JWT_SECRET) return;
  const token = await signToken(DEMO_APP, { ttl: 1800 });
  say(
    `the portal of ${DEMO_APP} (valid 30 minutes; npm run portal -- ${DEMO_APP} prints another): ${origin}/portal/#token=${token}`,
  );
}
portalLink();

// ---- stopping ----------------------------------------------------------------------------------
const stopCron = () => {
  clearTimeout(timer);
  timer = undefined;
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stopCron();
    // Ctrl-C reaches wrangler too (same process group); a signal sent to this process alone is passed on.
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}
child.on('exit', (code, signal) => {
  stopCron();
  process.exit(code ?? (signal === 'SIGINT' || signal === 'SIGTERM' ? 0 : 1));
});
child.on('error', (err) => {
  stopCron();
  console.error(`Could not start wrangler dev: ${err.message}`);
  process.exit(1);
});
