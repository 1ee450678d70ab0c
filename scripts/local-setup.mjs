// Prepares a local run, safe to repeat: .dev.vars with a random secret (only if missing), the
// migrations applied to the local D1 (a database made by an older release is upgraded in place),
// then the post-deploy ones (scripts/post-deploy.mjs: locally the code that runs is always this
// tree's), and demo webhooks seeded into a database that never had any.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { DEV_VARS, readDevVars } from './dev-vars.mjs';

const root = new URL('..', import.meta.url);

const secretKeyLine = () => `WEBHOOK_SECRET_KEY=${randomBytes(32).toString('base64')}`;
if (!existsSync(DEV_VARS)) {
  const example = readFileSync(new URL('.dev.vars.example', root), 'utf8');
  const secret = randomBytes(48).toString('base64url');
  writeFileSync(
    DEV_VARS,
    example.replace(/^JWT_SECRET=.*$/m, `JWT_SECRET=${secret}`).replace(/^WEBHOOK_SECRET_KEY=.*$/m, secretKeyLine()),
    { mode: 0o600 },
  );
  console.log('Created .dev.vars with a random JWT_SECRET and WEBHOOK_SECRET_KEY.');
} else if (!readDevVars().WEBHOOK_SECRET_KEY && !readDevVars().WEBHOOK_SECRET_KEYS) {
  // A .dev.vars from before deliveries: it gains the key that encrypts signing secrets. One with a
  // key ring (WEBHOOK_SECRET_KEYS: a rotation, docs/configuration.md) is left as it is: a random
  // WEBHOOK_SECRET_KEY would join the ring as the key `default`, which sealed nothing stored.
  appendFileSync(DEV_VARS, `\n# Encrypts webhooks' signing secrets at rest.\n${secretKeyLine()}\n`);
  console.log('Added a random WEBHOOK_SECRET_KEY to .dev.vars.');
}

const run = (command, ...args) => {
  const done = spawnSync(command, args, {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
  });
  if (done.status !== 0) {
    console.error(`${command} ${args.join(' ')} failed`);
    process.exit(done.status ?? 1);
  }
};
const wrangler = (...args) => run('npx', '--no-install', 'wrangler', ...args);

wrangler('d1', 'migrations', 'apply', 'DB', '--local');
run(process.execPath, 'scripts/post-deploy.mjs', '--local');
wrangler('d1', 'execute', 'DB', '--local', '--file', 'scripts/seed.sql');
console.log('Local D1 ready: migrations applied, demo webhooks seeded (demo-app-1, demo-app-2).');
console.log('Get a token with: npm run token -- demo-app-1');
