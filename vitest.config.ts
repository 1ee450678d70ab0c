import { readFileSync } from 'node:fs';
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';
import { unstable_readConfig, unstable_splitSqlQuery } from 'wrangler';
import { buildPortal } from './scripts/build-portal.mjs';

// The portal's static assets (wrangler.toml [assets]): the Workers pool serves the folder but runs
// no [build] command, so it is built here, before either project starts.
await buildPortal();

// The test database is made by the real migrations (test/setup.ts), then the post-deploy ones, as
// `npm start` and a deploy make theirs; schema.sql, split the way `wrangler d1 execute` splits it,
// is compared with them.
const migrations = await readD1Migrations(new URL('./migrations', import.meta.url).pathname);
const postDeploy = await readD1Migrations(new URL('./migrations/post-deploy', import.meta.url).pathname);
const schema = unstable_splitSqlQuery(readFileSync(new URL('./schema.sql', import.meta.url), 'utf8'));
// The rate limits wrangler.toml sets (locally and per environment), so a test can check the
// Worker's Retry-After against them.
const ratelimits = Object.fromEntries(
  ['', 'staging', 'production'].map((env) => [
    env || 'local',
    unstable_readConfig({ config: './wrangler.toml', env: env || undefined }).ratelimits,
  ]),
);
const unlimited = { simple: { limit: 1_000_000_000, period: 60 as const } };

const workers = {
  plugins: [
    cloudflareTest({
      wrangler: { configPath: './wrangler.toml' },
      miniflare: {
        // Every setting is given here, so wrangler.toml and a local .dev.vars cannot change a test.
        bindings: {
          JWT_SECRET: 'test-secret-for-vitest-only-0123456789abcdef',
          JWT_PUBLIC_KEY: '',
          JWT_JWKS_URL: '',
          JWT_ALGORITHMS: '',
          JWT_ISSUER: 'https://issuer.test',
          JWT_AUDIENCE: 'nft-webhook-api',
          JWT_APP_CLAIM: 'sub',
          JWT_TYP: '',
          JWT_CLOCK_TOLERANCE: '',
          JWT_MAX_TOKEN_AGE: '',
          WEBHOOKS_PER_APP: '',
          WEBHOOK_SECRET_KEY: 'dGVzdC1rZXktZm9yLXZpdGVzdC1vbmx5LTAxMjM0NTY=',
          DELIVERY_TIMEOUT_SECONDS: '',
          DELIVERY_RETRY_SCHEDULE: '',
          AUTO_DISABLE_AFTER_HOURS: '',
          DELIVERY_RETENTION_DAYS: '',
          EVENT_DEDUPE_HOURS: '',
          ENDPOINT_RATE_LIMIT: '',
          HISTORY_HOT_SECONDS: '',
          WEBHOOK_URL_ALLOWED_ORIGINS: '',
          DESTINATION_API_BASES: '',
          PORTAL_FRAME_ANCESTORS: '',
          OPERATIONAL_WEBHOOK_URL: '',
          OPERATIONAL_WEBHOOK_SECRET: '',
          TEST_MIGRATIONS: migrations,
          TEST_POST_DEPLOY: postDeploy,
          TEST_SCHEMA: schema,
          TEST_RATELIMITS: JSON.stringify(ratelimits),
        },
        // DB: the service's. The others are for the schema tests: one made from schema.sql, one
        // made from an earlier release's schema and upgraded, one for the post-deploy drop.
        // The events producer sends to a queue without a consumer: the tests call the consumers
        // themselves (createMessageBatch). Deliveries are sent by the endpoints' objects.
        queueProducers: { EVENTS: 'test-events' },
        d1Databases: { DB: 'db', SCHEMA_DB: 'schema-db', UPGRADE_DB: 'upgrade-db', MOVE_DB: 'move-db' },
        // Rate limiter state is shared by all test files: the suite runs without limits, and the
        // limit tests use their own small limiters.
        ratelimits: {
          APP_RATE_LIMITER: { namespace_id: '1001', ...unlimited },
          AUTH_FAILURE_RATE_LIMITER: { namespace_id: '1002', ...unlimited },
          PUBLISH_RATE_LIMITER: { namespace_id: '1003', ...unlimited },
          TEST_APP_LIMITER: { namespace_id: '9101', simple: { limit: 3, period: 60 } },
          TEST_FAILURE_LIMITER: { namespace_id: '9102', simple: { limit: 3, period: 60 } },
          TEST_PUBLISH_LIMITER: { namespace_id: '9103', simple: { limit: 3, period: 60 } },
        },
      },
    }),
  ],
  test: {
    name: 'workers',
    include: ['test/*.test.ts'],
    setupFiles: ['./test/setup.ts'],
  },
};

export default defineConfig({
  test: {
    // The Worker's JSON log lines are asserted where they matter (spies); elsewhere they are noise.
    onConsoleLog: (line) => !line.startsWith('{"level":'),
    projects: [
      // In workerd, through the pool: the Worker's own module, bindings and D1 (most tests).
      workers,
      // In Node, over the repository's own files: the layers of src/.
      { test: { name: 'repo', include: ['test/repo/*.test.ts'], environment: 'node' } },
      // In Node, over real sockets against `wrangler dev`: what only real HTTP can show.
      {
        test: {
          name: 'http',
          include: ['test/http/*.test.ts'],
          exclude: ['test/http/portal*.test.ts'],
          environment: 'node',
          globalSetup: ['./test/http/wrangler-dev.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      // The application portal in headless Chromium, against a `wrangler dev` of its own started the
      // same way; after the others (groupOrder), so a browser never competes with their timings.
      {
        test: {
          name: 'browser',
          include: ['test/http/portal*.test.ts'],
          environment: 'node',
          globalSetup: ['./test/http/wrangler-dev.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
