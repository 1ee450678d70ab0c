declare namespace Cloudflare {
  interface Env {
    /** migrations/, read by readD1Migrations (vitest.config.ts). */
    TEST_MIGRATIONS: import('cloudflare:test').D1Migration[];
    /** migrations/post-deploy/, applied after them (test/setup.ts). */
    TEST_POST_DEPLOY: import('cloudflare:test').D1Migration[];
    /** schema.sql, split into statements (vitest.config.ts). */
    TEST_SCHEMA: string[];
    /** Databases of the schema tests: one from schema.sql, one upgraded from an earlier release, one for the post-deploy drop. */
    SCHEMA_DB: D1Database;
    UPGRADE_DB: D1Database;
    MOVE_DB: D1Database;
    /** wrangler.toml's [[ratelimits]], as JSON. */
    TEST_RATELIMITS: string;
    /** Small real (simulated) limiters: 3 per 60 s. */
    TEST_APP_LIMITER: RateLimit;
    TEST_FAILURE_LIMITER: RateLimit;
    TEST_PUBLISH_LIMITER: RateLimit;
  }
}
