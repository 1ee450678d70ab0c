// Today's release (975efd3: migrations 0001 and 0002) on a database the pending migrations upgrade,
// as a deploy does it: `wrangler d1 migrations apply` first, while that release is still live, so
// it must keep working on the upgraded schema. The database is made by the release's own
// migrations (its `git archive`), given rows, upgraded with this tree's migrations folder, and then
// served by the release's own Worker under `wrangler dev`, over HTTP.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { unpackRelease } from './release';
import { type Dev, startWranglerDev, wranglerAsync } from './wrangler-dev';

/** Today's release: what production runs when this tree is deployed. */
const RELEASE = '975efd3';
const root = new URL('../..', import.meta.url).pathname;

const folder = mkdtempSync(join(tmpdir(), 'nft-webhook-release-'));
let dev: Dev | undefined;
afterAll(async () => {
  await dev?.stop();
  rmSync(folder, { recursive: true, force: true });
});

const state = join(folder, 'state');
/** Runs SQL on the upgraded database; the rows of each statement. */
async function sql(command: string): Promise<Record<string, unknown>[][]> {
  const out = await wranglerAsync([
    'd1',
    'execute',
    'DB',
    '--local',
    '--persist-to',
    state,
    '--json',
    '--command',
    command,
  ]);
  return (JSON.parse(out) as { results: Record<string, unknown>[] }[]).map((r) => r.results);
}

/** Every row of the tables release 2 has, in the columns it has. */
const DUMP = `SELECT CAST(webhook_id AS TEXT) AS id, app_id, url, is_enabled, created_at, updated_at FROM webhooks ORDER BY webhook_id;
  SELECT audit_id, CAST(webhook_id AS TEXT) AS webhook_id, app_id, action, row_before, actor, actor_jti, request_id, created_at, write_id
  FROM webhook_audit ORDER BY audit_id;
  SELECT app_id, idem_key, request_hash, CAST(webhook_id AS TEXT) AS webhook_id, webhook_row, created_at FROM idempotency_keys ORDER BY app_id, idem_key`;

describe(`today's release (${RELEASE}) on a database upgraded by the pending migrations`, () => {
  it('upgrades a database of migrations 0001 and 0002 with rows by `wrangler d1 migrations apply` alone, rows kept; the release keeps working on it', async (context) => {
    // The release's tree, with this checkout's packages.
    const release = unpackRelease(RELEASE, folder, context);
    // Released migrations are never edited: 0001 and 0002 are the same files here.
    for (const name of ['0001_initial.sql', '0002_register_read_list.sql']) {
      expect(readFileSync(join(release, 'migrations', name), 'utf8'), name).toBe(
        readFileSync(join(root, 'migrations', name), 'utf8'),
      );
    }

    // The database at today's main: made by the release's own migrations, then given rows.
    const made = await wranglerAsync(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', state], release);
    expect(made).toMatch(/0002_register_read_list\.sql/);
    expect(made).not.toMatch(/0003_/);
    const [, , , ...before] = await sql(`
      INSERT INTO webhooks (webhook_id, app_id, url, is_enabled, created_at, updated_at) VALUES
        (1, 'app-a', 'https://a.example/hook', 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'),
        (2, 'app-a', 'https://a.example/other', 0, '2026-01-02T00:00:00.000Z', '2026-01-03T00:00:00.000Z'),
        (3, 'app-b', 'HTTPS://Upper.Example/x', 1, '2026-01-04T00:00:00.000Z', '2026-01-04T00:00:00.000Z'),
        (9007199254740993, 'app-b', 'https://b.example/int64', 1, '2026-01-05T00:00:00.000Z', '2026-01-05T00:00:00.000Z');
      INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, actor_jti, request_id, created_at, write_id) VALUES
        (1, 'app-a', 'create', '{"webhook_id":1}', 'app-a', 'jti-1', 'r1', '2026-01-01T00:00:00.000Z', 'w1'),
        (2, 'app-a', 'disable', '{"webhook_id":2,"is_enabled":1}', 'app-a', NULL, 'r2', '2026-01-03T00:00:00.000Z', NULL),
        (5, 'app-a', 'delete', '{"webhook_id":5}', 'app-a', NULL, 'r3', '2026-01-03T00:00:01.000Z', NULL);
      INSERT INTO idempotency_keys (app_id, idem_key, request_hash, webhook_id, webhook_row, created_at) VALUES
        ('app-a', 'key-1', 'hash-1', 1, '{"webhook_id":1,"url":"https://a.example/hook"}', '2026-01-01T00:00:00.000Z');
      ${DUMP}`);
    expect(before.map((rows) => rows.length)).toEqual([4, 3, 1]);

    // The deploy's step: this tree's migrations, applied by wrangler alone.
    const upgraded = await wranglerAsync(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', state]);
    expect(upgraded).toMatch(/0003_deliveries\.sql/);
    const [webhooks, audit, keys, newColumns, reasons, tables, applied] = await sql(`${DUMP};
      SELECT CAST(webhook_id AS TEXT) AS id, event_types, secret, previous_secret, previous_secret_until, failing_since, url_checked
      FROM webhooks ORDER BY webhook_id;
      SELECT DISTINCT reason FROM webhook_audit;
      SELECT (SELECT COUNT(*) FROM events) + (SELECT COUNT(*) FROM deliveries) + (SELECT COUNT(*) FROM delivery_attempts) AS n;
      SELECT name FROM d1_migrations ORDER BY id`);
    expect([webhooks, audit, keys]).toEqual(before);
    const untouched = {
      event_types: null,
      secret: null,
      previous_secret: null,
      previous_secret_until: null,
      failing_since: null,
    };
    // Every row there before the upgrade has its URL checked again by the new release (url_checked 0).
    expect(newColumns).toEqual(['1', '2', '3', '9007199254740993'].map((id) => ({ id, ...untouched, url_checked: 0 })));
    expect(reasons).toEqual([{ reason: null }]);
    expect(tables).toEqual([{ n: 0 }]);
    // Every migration of this tree, in order (the post-deploy ones go after the code, elsewhere).
    const ours = readdirSync(join(root, 'migrations')).filter((name) => name.endsWith('.sql'));
    expect(ours.slice(0, 5)).toEqual([
      '0001_initial.sql',
      '0002_register_read_list.sql',
      '0003_deliveries.sql',
      '0004_portal.sql',
      '0005_objects.sql',
    ]);
    expect(applied?.map((m) => m.name)).toEqual(ours.sort());

    // The release's Worker on the upgraded database.
    const secret = randomBytes(32).toString('base64url');
    const envFile = join(folder, 'release.vars');
    writeFileSync(
      envFile,
      [
        `JWT_SECRET=${secret}`,
        ...['JWT_PUBLIC_KEY', 'JWT_JWKS_URL', 'JWT_ALGORITHMS', 'JWT_ISSUER', 'JWT_AUDIENCE', 'JWT_TYP'].map(
          (k) => `${k}=`,
        ),
        'JWT_APP_CLAIM=sub',
        'WEBHOOKS_PER_APP=',
        '',
      ].join('\n'),
    );
    dev = await startWranglerDev({ cwd: release, persistTo: state, envFile, logFile: join(folder, 'release.log') });
    const token = await new SignJWT({ sub: 'app-a' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode(secret));
    const call = async (method: string, query: string, body?: string, headers: Record<string, string> = {}) => {
      const res = await fetch(`${dev?.baseUrl}/v1.0/app/nft/webhook${query}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
        body,
      });
      return { status: res.status, text: await res.text() };
    };
    const ok = '{"return":0,"message":"success"}';
    expect(await call('PUT', '', '{"webhook_id": 1, "is_enabled": false}')).toEqual({ status: 200, text: ok });
    expect(await call('DELETE', '?webhook_id=2')).toEqual({ status: 200, text: ok });
    const created = await call('POST', '', '{"url": "https://New.Example/hook"}', { 'idempotency-key': 'upgrade-1' });
    expect(created.status, created.text).toBe(201);
    // The id past the int64 one, in its exact digits.
    expect(created.text).toMatch(
      /^\{"return":0,"message":"success","value":\{"webhook_id":9007199254740994,"url":"https:\/\/new\.example\/hook","is_enabled":true,"created_at":"[^"]+","updated_at":"[^"]+"\}\}$/,
    );
    const read = await call('GET', '?webhook_id=9007199254740994');
    expect(read.status, read.text).toBe(200);
    expect(read.text).toContain('"webhook_id":9007199254740994,"url":"https://new.example/hook","is_enabled":true');
    const list = await call('GET', '?limit=10');
    expect(list.status, list.text).toBe(200);
    expect(
      [...list.text.matchAll(/"webhook_id":(\d+),"url":"[^"]*","is_enabled":(true|false)/g)].map((m) => m.slice(1)),
    ).toEqual([
      ['1', 'false'],
      ['9007199254740994', 'true'],
    ]);
    await dev.stop();

    // What the release wrote: its own columns; the new ones untouched or their defaults.
    const [rows, records, newKeys] = await sql(`
      SELECT CAST(webhook_id AS TEXT) AS id, app_id, url, is_enabled, created_at, updated_at,
        event_types, secret, previous_secret, previous_secret_until, failing_since, url_checked
      FROM webhooks ORDER BY webhook_id;
      SELECT audit_id, CAST(webhook_id AS TEXT) AS webhook_id, action, actor, json_valid(row_before) AS row_json,
        write_id IS NOT NULL AS has_write_id, reason
      FROM webhook_audit WHERE audit_id > 3 ORDER BY audit_id;
      SELECT app_id, idem_key, CAST(webhook_id AS TEXT) AS webhook_id FROM idempotency_keys ORDER BY idem_key`);
    const at = (day: string) => `2026-01-${day}T00:00:00.000Z`;
    const now = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const kept = { ...untouched, url_checked: 0 };
    expect(rows).toEqual([
      // Disabled by the release: is_enabled and updated_at written, nothing else.
      {
        id: '1',
        app_id: 'app-a',
        url: 'https://a.example/hook',
        is_enabled: 0,
        created_at: at('01'),
        updated_at: now,
        ...kept,
      },
      {
        id: '3',
        app_id: 'app-b',
        url: 'HTTPS://Upper.Example/x',
        is_enabled: 1,
        created_at: at('04'),
        updated_at: at('04'),
        ...kept,
      },
      {
        id: '9007199254740993',
        app_id: 'app-b',
        url: 'https://b.example/int64',
        is_enabled: 1,
        created_at: at('05'),
        updated_at: at('05'),
        ...kept,
      },
      // Made by the release: every new column its default (no secret yet: the new release gives it one).
      {
        id: '9007199254740994',
        app_id: 'app-a',
        url: 'https://new.example/hook',
        is_enabled: 1,
        created_at: now,
        updated_at: now,
        ...untouched,
        url_checked: 1,
      },
    ]);
    expect(rows?.[0]?.updated_at).not.toBe(at('01'));
    expect(records).toEqual([
      { audit_id: 4, webhook_id: '1', action: 'disable', actor: 'app-a', row_json: 1, has_write_id: 0, reason: null },
      { audit_id: 5, webhook_id: '2', action: 'delete', actor: 'app-a', row_json: 1, has_write_id: 0, reason: null },
      {
        audit_id: 6,
        webhook_id: '9007199254740994',
        action: 'create',
        actor: 'app-a',
        row_json: 1,
        has_write_id: 1,
        reason: null,
      },
    ]);
    expect(newKeys).toEqual([
      { app_id: 'app-a', idem_key: 'key-1', webhook_id: '1' },
      { app_id: 'app-a', idem_key: 'upgrade-1', webhook_id: '9007199254740994' },
    ]);
  });
});
