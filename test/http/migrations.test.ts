import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { wrangler } from './wrangler-dev';

const folder = mkdtempSync(join(tmpdir(), 'nft-webhook-upgrade-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const sql = (command: string) =>
  JSON.parse(wrangler(['d1', 'execute', 'DB', '--local', '--persist-to', folder, '--json', '--command', command]))[0]
    .results as Record<string, unknown>[];

describe('wrangler d1 migrations apply, as a deploy runs it', () => {
  it('upgrades a live database made from the first release’s schema.sql, every row kept; a second apply is harmless', () => {
    // The first release applied schema.sql with `d1 execute`; that schema.sql is migrations/0001.
    const first = new URL('../../migrations/0001_initial.sql', import.meta.url).pathname;
    wrangler(['d1', 'execute', 'DB', '--local', '--persist-to', folder, '--file', first]);
    sql(`INSERT INTO webhooks (webhook_id, app_id, url, is_enabled) VALUES
           (1, 'app-a', 'https://dup.example/hook', 1), (2, 'app-a', 'https://dup.example/hook', 0),
           (9007199254740993, 'app-b', 'HTTPS://Upper.Example/x', 1)`);
    sql(`INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, request_id)
         VALUES (2, 'app-a', 'disable', '{"webhook_id":2}', 'app-a', 'r1'), (5, 'app-a', 'delete', '{"webhook_id":5}', 'app-a', 'r2')`);
    const dump = () =>
      sql(`SELECT 'w' AS t, CAST(webhook_id AS TEXT) AS id, app_id, url, is_enabled, created_at FROM webhooks
           UNION ALL SELECT 'a', CAST(audit_id AS TEXT), app_id, action, row_before, created_at FROM webhook_audit
           ORDER BY 1, 2`);
    const before = dump();
    expect(before).toHaveLength(5);

    expect(wrangler(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', folder])).toMatch(/0002_\S+\.sql/);
    expect(dump()).toEqual(before);
    expect(wrangler(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', folder])).toMatch(
      /No migrations to apply/,
    );
    expect(dump()).toEqual(before);
    const tables = sql(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'idempotency_keys'`);
    expect(tables).toEqual([{ name: 'idempotency_keys' }]);
    // The upgraded audit table takes the new action.
    sql(`INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, request_id)
         VALUES (3, 'app-a', 'create', '{}', 'app-a', 'r3')`);
    expect(readFileSync(first, 'utf8')).toContain('CREATE TABLE IF NOT EXISTS webhooks');

    // Then, as a deploy does once the code is live, the post-deploy migrations: once, rows kept.
    const postDeploy = () =>
      spawnSync(process.execPath, ['scripts/post-deploy.mjs', '--local', '--persist-to', folder], {
        cwd: new URL('../..', import.meta.url).pathname,
        encoding: 'utf8',
      });
    const applied = postDeploy();
    expect(applied.status, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('Post-deploy migrations applied: 0001_drop_moved_tables.sql.');
    expect(postDeploy().stdout).toContain('Post-deploy migrations applied: none pending.');
    expect(sql(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('events', 'deliveries')`)).toEqual([]);
    expect(dump().filter((r) => r.t === 'w')).toEqual(before.filter((r) => r.t === 'w'));
  }, 240_000);
});
