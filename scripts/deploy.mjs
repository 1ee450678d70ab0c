// npm run deploy [-- staging|production]: applies the pending migrations to that environment's
// remote D1, then deploys the Worker to it. Default: production. Migrations go first and only
// expand the schema, so the release still live keeps working while they apply.
import { spawnSync } from 'node:child_process';

const ENVIRONMENTS = ['staging', 'production'];
const environment = process.argv[2] ?? 'production';
if (!ENVIRONMENTS.includes(environment)) {
  console.error(`Usage: npm run deploy -- [${ENVIRONMENTS.join('|')}]`);
  process.exit(2);
}

const wrangler = (...args) => {
  console.log(`> wrangler ${args.join(' ')}`);
  const run = spawnSync('npx', ['--no-install', 'wrangler', ...args, '--env', environment], {
    cwd: new URL('..', import.meta.url),
    stdio: 'inherit',
  });
  if (run.status !== 0) process.exit(run.status ?? 1);
};

wrangler('d1', 'migrations', 'apply', 'DB', '--remote');
wrangler('deploy');
