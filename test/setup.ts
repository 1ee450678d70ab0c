import { env } from 'cloudflare:test';
import { migrate } from './helpers/migrate';

// Storage is isolated per test file; each file starts from a database made by the migrations,
// the post-deploy ones included (this tree's code is the one that runs).
await migrate(env.DB);
