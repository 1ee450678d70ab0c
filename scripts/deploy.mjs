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

// Local receivers only: a deployed Worker must never deliver into a private network.
// (DEPLOY_CONFIG names another configuration file: the tests use it.)
const { unstable_readConfig } = await import('wrangler');
const config = process.env.DEPLOY_CONFIG ?? new URL('../wrangler.toml', import.meta.url).pathname;
const allowed = unstable_readConfig({ config, env: environment }).vars?.WEBHOOK_URL_ALLOWED_ORIGINS;
if (typeof allowed === 'string' && allowed.trim() !== '') {
  console.error(
    `Refusing to deploy ${environment}: WEBHOOK_URL_ALLOWED_ORIGINS is set ("${allowed}"). It is for local receivers and test rigs only.`,
  );
  process.exit(1);
}

const wrangler = (...args) => {
  console.log(`> wrangler ${args.join(' ')}`);
  const run = spawnSync('npx', ['--no-install', 'wrangler', ...args, '--config', config, '--env', environment], {
    cwd: new URL('..', import.meta.url),
    stdio: 'inherit',
  });
  if (run.status !== 0) process.exit(run.status ?? 1);
};

wrangler('d1', 'migrations', 'apply', 'DB', '--remote');
wrangler('deploy');
