import { env } from 'cloudflare:test';

// Storage is isolated per test file; each file starts from the real schema.
await env.DB.batch(env.TEST_SCHEMA.map((sql) => env.DB.prepare(sql)));
