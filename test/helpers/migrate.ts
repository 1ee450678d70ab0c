// A D1 database brought to this release's schema as a deploy brings it: migrations/ (before the
// code), then migrations/post-deploy/ (once the code is live), each with its own record table.
import { applyD1Migrations, env } from 'cloudflare:test';

/** The table that records the post-deploy migrations applied (scripts/post-deploy.mjs). */
export const POST_DEPLOY_TABLE = 'd1_post_deploy_migrations';

export const migrateBeforeDeploy = (db: D1Database) => applyD1Migrations(db, env.TEST_MIGRATIONS);
export const migrateAfterDeploy = (db: D1Database) => applyD1Migrations(db, env.TEST_POST_DEPLOY, POST_DEPLOY_TABLE);

export async function migrate(db: D1Database): Promise<void> {
  await migrateBeforeDeploy(db);
  await migrateAfterDeploy(db);
}
