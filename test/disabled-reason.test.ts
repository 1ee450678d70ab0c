// Why a disabled webhook is disabled: the migration that adds disabled_reason and disabled_at
// fills them in for webhooks disabled before it, from their latest disable record.
import { applyD1Migrations, env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';

describe('migration 0010 on a database with disabled webhooks', () => {
  it('gives each disabled webhook the reason and time of its latest disable record, and leaves enabled ones without', async () => {
    const db = env.UPGRADE_DB;
    await applyD1Migrations(
      db,
      env.TEST_MIGRATIONS.filter((m) => m.name < '0010'),
    );
    const t1 = '2026-11-20T10:15:00.000Z';
    const t2 = '2026-11-21T11:45:00.000Z';
    const created = '2026-11-01T00:00:00.000Z';
    const audit = (id: number, actor: string, reason: string | null, at: string) =>
      db
        .prepare(
          `INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, request_id, created_at, reason)
           VALUES (?1, 'app-m', 'disable', '{}', ?2, 'r', ?3, ?4)`,
        )
        .bind(id, actor, at, reason);
    await db.batch([
      db
        .prepare(
          `INSERT INTO webhooks (webhook_id, app_id, url, is_enabled, created_at, updated_at) VALUES
           (1, 'app-m', 'https://m.example.com/1', 0, ?1, ?1), (2, 'app-m', 'https://m.example.com/2', 0, ?1, ?1),
           (3, 'app-m', 'https://m.example.com/3', 0, ?1, ?1), (4, 'app-m', 'https://m.example.com/4', 0, ?1, ?1),
           (5, 'app-m', 'https://m.example.com/5', 1, ?1, ?1)`,
        )
        .bind(created),
      audit(1, 'system', 'the endpoint answered 410 Gone', t1),
      audit(2, 'system', `every attempt failed since ${t1}`, t2),
      // Disabled by the service, then by hand after enabling it again: the latest counts.
      audit(3, 'system', 'the endpoint answered 410 Gone', t1),
      audit(3, 'app-m', null, t2),
      // Webhook 4 was registered disabled: no disable record.
      audit(5, 'system', 'the endpoint answered 410 Gone', t1),
    ]);
    await applyD1Migrations(db, env.TEST_MIGRATIONS);
    const { results } = await db
      .prepare('SELECT webhook_id, disabled_reason, disabled_at FROM webhooks ORDER BY webhook_id')
      .all();
    expect(results).toEqual([
      { webhook_id: 1, disabled_reason: 'gone', disabled_at: t1 },
      { webhook_id: 2, disabled_reason: 'failing', disabled_at: t2 },
      { webhook_id: 3, disabled_reason: 'application', disabled_at: t2 },
      { webhook_id: 4, disabled_reason: 'application', disabled_at: created },
      { webhook_id: 5, disabled_reason: null, disabled_at: null },
    ]);
    // Only the three reasons can be stored.
    await expect(
      db.prepare(`UPDATE webhooks SET disabled_reason = 'bored' WHERE webhook_id = 1`).run(),
    ).rejects.toThrow();
  });
});
