// Post-deploy migrations (migrations/post-deploy/): the schema changes that remove something the
// release before may still use (a table, a column), so they are applied only once this release's
// code is live: by `npm run deploy` after `wrangler deploy`, and by the local setup right after
// migrations/ (npm start and the tests run on the final schema). Applied the way
// `wrangler d1 migrations apply` applies migrations/: each file once, in name order, its record
// (in d1_post_deploy_migrations, shaped like wrangler's d1_migrations) written by the same
// command, one D1 batch, so a file and its record are applied together or not at all.
//
// As a command: node scripts/post-deploy.mjs --local [--persist-to <dir>]   (the tests use it), or
// with --remote [--env <name>] by hand (npm run deploy does this itself).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const POST_DEPLOY_TABLE = 'd1_post_deploy_migrations';
const folder = new URL('../migrations/post-deploy/', import.meta.url);

/** The post-deploy migrations, in the order they apply: `{ name, sql }`. */
export const postDeployMigrations = () =>
  readdirSync(folder)
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => ({ name, sql: readFileSync(new URL(name, folder), 'utf8') }));

/**
 * Applies the post-deploy migrations not applied yet. `execute(sql)` runs
 * `wrangler d1 execute DB --json --command <sql>` on the database and returns its JSON (one result
 * per statement), or a promise of it. Returns the names applied now.
 */
export async function applyPostDeploy(execute) {
  const read = await execute(
    `CREATE TABLE IF NOT EXISTS ${POST_DEPLOY_TABLE} (
       id         INTEGER PRIMARY KEY AUTOINCREMENT,
       name       TEXT UNIQUE,
       applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
     ); SELECT name FROM ${POST_DEPLOY_TABLE};`,
  );
  const applied = new Set((read.at(-1)?.results ?? []).map((row) => row.name));
  const pending = postDeployMigrations().filter((m) => !applied.has(m.name));
  for (const { name, sql } of pending) {
    await execute(`${sql}\nINSERT INTO ${POST_DEPLOY_TABLE} (name) VALUES ('${name}');`);
  }
  return pending.map((m) => m.name);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const applied = await applyPostDeploy((sql) => {
    const run = spawnSync(
      'npx',
      ['--no-install', 'wrangler', 'd1', 'execute', 'DB', ...args, '--json', `--command=${sql}`],
      {
        cwd: new URL('..', import.meta.url),
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
      },
    );
    if (run.status !== 0) {
      console.error(`wrangler d1 execute failed:\n${run.stdout}${run.stderr}`);
      process.exit(1);
    }
    return JSON.parse(run.stdout);
  });
  console.log(`Post-deploy migrations applied: ${applied.length === 0 ? 'none pending' : applied.join(', ')}.`);
}
