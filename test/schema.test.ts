import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { bearer, del, expectSuccess, insertWebhook, tokenFor, webhookRow } from './helpers';

describe('schema.sql', () => {
  it('applies again over an existing database without error or data loss', async () => {
    const id = await insertWebhook('app-a');
    await env.DB.batch(env.TEST_SCHEMA.map((sql) => env.DB.prepare(sql)));
    expect(await webhookRow(id)).not.toBeNull();
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
  });
});
