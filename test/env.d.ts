declare namespace Cloudflare {
  interface Env {
    /** schema.sql, split into statements (vitest.config.ts). */
    TEST_SCHEMA: string[];
  }
}
