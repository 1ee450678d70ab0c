declare namespace Cloudflare {
  interface Env {
    /** schema.sql, split into statements (vitest.config.ts). */
    TEST_SCHEMA: string[];
    /** wrangler.toml's [[ratelimits]], as JSON. */
    TEST_RATELIMITS: string;
    /** Small real (simulated) limiters: 3 per 60 s. */
    TEST_APP_LIMITER: RateLimit;
    TEST_FAILURE_LIMITER: RateLimit;
  }
}
