import { readFileSync } from 'node:fs';
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { unstable_splitSqlQuery } from 'wrangler';
import { defineConfig } from 'vitest/config';

// The test database gets the real schema.sql, split the way `wrangler d1 execute` splits it.
const schema = unstable_splitSqlQuery(readFileSync(new URL('./schema.sql', import.meta.url), 'utf8'));

export default defineConfig({
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
          TEST_SCHEMA: schema,
        },
      },
    }),
  ],
  test: {
    setupFiles: ['./test/setup.ts'],
  },
});
