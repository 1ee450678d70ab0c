import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { insertWebhook, webhookRow } from './helpers/database';
import { migrate, migrateAfterDeploy, migrateBeforeDeploy, POST_DEPLOY_TABLE } from './helpers/migrate';
import { expectSuccess, expectValue } from './helpers/replies';
import { del, fetchWith, postRequest } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

/**
 * A database's schema, comparable across the ways it was made: every table, index and trigger
 * with its SQL, whitespace and quoting folded and `IF NOT EXISTS` dropped (SQLite keeps a renamed
 * table's SQL with its new name quoted, and a statement's text as written).
 */
async function schemaOf(db: D1Database): Promise<Record<string, string>> {
  const { results } = await db
    .prepare(
      `SELECT type, name, sql FROM sqlite_master
       WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT IN ('d1_migrations', 'd1_post_deploy_migrations')
       ORDER BY type, name`,
    )
    .all<{ type: string; name: string; sql: string }>();
  const fold = (sql: string) =>
    sql
      .replace(/--[^\n]*/g, '')
      .replace(/\s+/g, ' ')
      .replace(/ IF NOT EXISTS/gi, '')
      .replace(/"(\w+)"/g, '$1')
      .replace(/\( /g, '(')
      .replace(/ \)/g, ')')
      .replace(/ ,/g, ',')
      .trim();
  return Object.fromEntries(results.map((r) => [`${r.type} ${r.name}`, fold(r.sql)]));
}

/** The first release's schema: the first migration, which is schema.sql as it was then. */
const firstRelease = () => env.TEST_MIGRATIONS[0]!.queries;

describe('schema.sql and migrations/ (post-deploy/ included)', () => {
  it('give the same schema: schema.sql is the complete current schema', async () => {
    await env.SCHEMA_DB.batch(env.TEST_SCHEMA.map((sql) => env.SCHEMA_DB.prepare(sql)));
    const fromSchema = await schemaOf(env.SCHEMA_DB);
    expect(Object.keys(fromSchema)).toEqual(
      expect.arrayContaining(['table webhooks', 'table webhook_audit', 'table idempotency_keys']),
    );
    expect(await schemaOf(env.DB)).toEqual(fromSchema);
  });

  it('schema.sql applies again over an existing database without error or data loss', async () => {
    const id = await insertWebhook('app-a');
    await env.DB.batch(env.TEST_SCHEMA.map((sql) => env.DB.prepare(sql)));
    expect(await webhookRow(id)).not.toBeNull();
  });

  it('upgrade a live database of the first release in place, every row kept, and a second apply is harmless', async () => {
    const db = env.UPGRADE_DB;
    await db.batch(firstRelease().map((sql) => db.prepare(sql)));
    // Rows the first release could hold, legacy ones included: one URL twice, an unnormalised URL,
    // an id above 2^53, and audit records of every kind it wrote.
    await db.batch([
      db.prepare(
        `INSERT INTO webhooks (webhook_id, app_id, url, is_enabled) VALUES
           (1, 'app-a', 'https://dup.example/hook', 1),
           (2, 'app-a', 'https://dup.example/hook', 0),
           (3, 'app-b', 'HTTPS://Upper.Example/x', 1),
           (9007199254740993, 'app-b', 'https://big.example/', 1)`,
      ),
      db.prepare(
        `INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, actor_jti, request_id) VALUES
           (2, 'app-a', 'disable', '{"webhook_id":2}', 'app-a', 'j', 'r1'),
           (7, 'app-a', 'delete', '{"webhook_id":7}', 'app-a', NULL, 'r2'),
           (1, 'app-a', 'enable', '{"webhook_id":1}', 'app-a', NULL, 'r3')`,
      ),
    ]);
    const dump = async () => {
      const [hooks, audit] = await db.batch([
        // The first release's columns; the later ones are checked below.
        db.prepare(
          `SELECT webhook_id, app_id, url, is_enabled, created_at, updated_at, CAST(webhook_id AS TEXT) AS id
           FROM webhooks ORDER BY webhook_id`,
        ),
        db.prepare(
          `SELECT audit_id, CAST(webhook_id AS TEXT) AS id, app_id, action, row_before, actor, actor_jti,
                  request_id, created_at
           FROM webhook_audit ORDER BY audit_id`,
        ),
      ]);
      return { hooks: hooks!.results, audit: audit!.results };
    };
    const before = await dump();

    await migrate(db);
    expect(await dump()).toEqual(before);
    expect(await schemaOf(db)).toEqual(await schemaOf(env.DB));
    await migrate(db);
    expect(await dump()).toEqual(before);
    // Columns added later start as the rows' history says: every event type, no secret yet, healthy,
    // URLs not yet brought to their normalised form.
    const added = await db
      .prepare('SELECT DISTINCT event_types, secret, previous_secret, failing_since, url_checked FROM webhooks')
      .all();
    expect(added.results).toEqual([
      { event_types: null, secret: null, previous_secret: null, failing_since: null, url_checked: 0 },
    ]);

    // The upgraded database serves the new release: the new rules hold for new registrations,
    // and ids go on from the old sequence.
    const token = await tokenFor('app-a');
    const dup = await fetchWith({ DB: db }, postRequest({ url: 'https://dup.example/hook' }, bearer(token)));
    expect(dup.status).toBe(409);
    // A URL stored before URLs were normalised counts in its normalised form.
    const legacy = await fetchWith(
      { DB: db },
      postRequest({ url: 'https://upper.example/x' }, bearer(await tokenFor('app-b'))),
    );
    expect(legacy.status).toBe(409);
    const { value } = await expectValue<{ webhook_id: number }>(
      await fetchWith({ DB: db }, postRequest({ url: 'https://new.example/hook' }, bearer(token))),
      201,
    );
    expect(BigInt(value.webhook_id)).toBeGreaterThan(9007199254740993n);
    const audit = await db.prepare(`SELECT audit_id, action FROM webhook_audit ORDER BY audit_id`).all();
    expect(audit.results.map((r) => r.action)).toEqual(['disable', 'delete', 'enable', 'create']);
    expect(audit.results[3]?.audit_id).toBe(4);
  });

  it('the post-deploy drop of the old delivery tables refuses while one holds a row, dropping nothing, then drops them once', async () => {
    const db = env.MOVE_DB;
    await migrateBeforeDeploy(db);
    const old = ['events', 'deliveries', 'delivery_attempts', 'delivery_stats'];
    const tables = async () =>
      (
        await db
          .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (SELECT value FROM json_each(?1))`)
          .bind(JSON.stringify(old))
          .all<{ name: string }>()
      ).results
        .map((r) => r.name)
        .sort();
    expect(await tables()).toEqual([...old].sort());
    // A row the move left behind (here: a counter of the release before).
    await db.prepare(`INSERT INTO delivery_stats (webhook_id, hour) VALUES (1, '2026-11-01T00:00:00Z')`).run();
    await expect(migrateAfterDeploy(db)).rejects.toThrow(/CHECK constraint failed/);
    expect(await tables()).toEqual([...old].sort());
    expect(await db.prepare(`SELECT COUNT(*) AS n FROM ${POST_DEPLOY_TABLE}`).first('n')).toBe(0);
    await db.prepare('DELETE FROM delivery_stats').run();
    await migrateAfterDeploy(db);
    expect(await tables()).toEqual([]);
    expect((await db.prepare(`SELECT name FROM ${POST_DEPLOY_TABLE}`).all()).results.map((r) => r.name)).toEqual(
      env.TEST_POST_DEPLOY.map((m) => m.name),
    );
    await migrateAfterDeploy(db);
    expect(await schemaOf(db)).toEqual(await schemaOf(env.DB));
  });

  it('never hands out a deleted id again', async () => {
    const first = await insertWebhook('app-a');
    await expectSuccess(await del(`webhook_id=${first}`, bearer(await tokenFor('app-a'))));
    const next = await insertWebhook('app-a');
    expect(BigInt(next)).toBeGreaterThan(BigInt(first));
  });

  it('refuses rows that break its rules', async () => {
    const insert = (sql: string) => env.DB.prepare(sql).run();
    await expect(insert(`INSERT INTO webhooks (app_id, url, is_enabled) VALUES ('app-a', 'u', 2)`)).rejects.toThrow();
    await expect(insert(`INSERT INTO webhooks (webhook_id, app_id, url) VALUES (0, 'app-a', 'u')`)).rejects.toThrow();
    await expect(insert(`INSERT INTO webhooks (app_id, url) VALUES ('', 'u')`)).rejects.toThrow();
    await expect(
      insert(
        `INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, request_id) VALUES (1, 'a', 'rename', '{}', 'a', 'r')`,
      ),
    ).rejects.toThrow();
    await expect(
      insert(
        `INSERT INTO idempotency_keys (app_id, idem_key, request_hash, webhook_id, webhook_row) VALUES ('a', 'k', 'h', 1, 'not json')`,
      ),
    ).rejects.toThrow();
  });
});
