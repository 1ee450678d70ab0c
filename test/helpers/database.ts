// D1: rows written and read by hand, and bindings that count or fail round trips.
import { env } from 'cloudflare:test';
import { expect } from 'vitest';
import { fetchWorker, URL_ } from './requests';
import { bearer, tokenFor } from './tokens';

/**
 * Makes one request that reaches D1, so that the isolate holds a bookmark: the reply of a later
 * failure in D1 then carries that one, and the Worker asks D1 nothing more (which counts of round
 * trips would see). Without it, whether a test of a failure runs first in its file would matter.
 */
export async function holdBookmark(): Promise<void> {
  const res = await fetchWorker(new Request(URL_, { headers: bearer(await tokenFor('bookmark-holder')) }), env);
  expect(res.headers.get('x-d1-bookmark')).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
}

/** Inserts a webhook by hand (no audit record) and returns its id as decimal text. */
export async function insertWebhook(
  appId: string,
  { enabled = true, id, url }: { enabled?: boolean; id?: string; url?: string } = {},
): Promise<string> {
  const row = await env.DB.prepare(
    `INSERT INTO webhooks (webhook_id, app_id, url, is_enabled)
     VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4)
     RETURNING CAST(webhook_id AS TEXT) AS id`,
  )
    .bind(id ?? null, appId, url ?? `https://${appId}.example/hook`, enabled ? 1 : 0)
    .first<{ id: string }>();
  return row!.id;
}

export interface WebhookRow {
  webhook_id: string;
  app_id: string;
  url: string;
  is_enabled: number;
  event_types: string | null;
  created_at: string;
  updated_at: string;
  description: string | null;
  rate_limit: number | null;
}

export async function webhookRow(id: string): Promise<WebhookRow | null> {
  return env.DB.prepare(
    `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, url, is_enabled, event_types, created_at, updated_at,
       description, rate_limit
     FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)`,
  )
    .bind(id)
    .first<WebhookRow>();
}

export interface AuditRow {
  webhook_id: string;
  app_id: string;
  action: string;
  row_before: string;
  actor: string;
  actor_jti: string | null;
  request_id: string;
  created_at: string;
}

export async function auditRows(id: string): Promise<AuditRow[]> {
  const { results } = await env.DB.prepare(
    `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, action, row_before, actor, actor_jti,
            request_id, created_at
     FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER) ORDER BY audit_id`,
  )
    .bind(id)
    .all<AuditRow>();
  return results;
}

/** Every row of every table, to show that a request changed nothing. */
export async function snapshot(): Promise<unknown> {
  const [webhooks, audit, keys] = await env.DB.batch([
    env.DB.prepare('SELECT *, CAST(webhook_id AS TEXT) AS id FROM webhooks ORDER BY webhook_id'),
    env.DB.prepare('SELECT *, CAST(webhook_id AS TEXT) AS id FROM webhook_audit ORDER BY audit_id'),
    env.DB.prepare('SELECT * FROM idempotency_keys ORDER BY app_id, idem_key'),
  ]);
  return { webhooks: webhooks!.results, audit: audit!.results, keys: keys!.results };
}

/** The application's webhooks, oldest first, as the tables hold them. */
export async function webhooksOf(appId: string): Promise<WebhookRow[]> {
  const { results } = await env.DB.prepare(
    `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, url, is_enabled, event_types, created_at, updated_at,
       description, rate_limit
     FROM webhooks WHERE app_id = ?1 ORDER BY webhook_id`,
  )
    .bind(appId)
    .all<WebhookRow>();
  return results;
}

/**
 * Wraps a D1 binding so that `roundTrip` runs each of its round trips: a `batch` or `exec`, a
 * statement's `first` / `run` / `all` / `raw`, on the database or on any of its sessions.
 */
function interceptDb(db: D1Database, roundTrip: <T>(run: () => Promise<T>) => Promise<T>): D1Database {
  const statement = (stmt: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(stmt, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (typeof value !== 'function') return value;
        if (prop === 'bind') return (...args: unknown[]) => statement(value.apply(target, args));
        if (prop === 'first' || prop === 'run' || prop === 'all' || prop === 'raw') {
          return (...args: unknown[]) => roundTrip(() => value.apply(target, args));
        }
        return value.bind(target);
      },
    });
  const wrap = <D extends object>(inner: D): D =>
    new Proxy(inner, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (typeof value !== 'function') return value;
        if (prop === 'prepare') return (sql: string) => statement(value.call(target, sql));
        if (prop === 'batch' || prop === 'exec')
          return (...args: unknown[]) => roundTrip(() => value.apply(target, args));
        if (prop === 'withSession') return (...args: unknown[]) => wrap(value.apply(target, args));
        return value.bind(target);
      },
    });
  return wrap(db);
}

/** Wraps a D1 binding and counts its round trips (see interceptDb). */
export function countingDb(db: D1Database): { db: D1Database; calls: () => number } {
  let calls = 0;
  return {
    db: interceptDb(db, (run) => {
      calls++;
      return run();
    }),
    calls: () => calls,
  };
}

/** The error D1 gives when it is overloaded. */
export const OVERLOADED = 'D1_ERROR: D1 DB is overloaded. Too many requests queued.';

/** What the faulty binding does on one call: fail before running, run and then lose the reply, or run. */
export type Fault = { before: string } | { after: string } | null;

/** A D1 binding that injects `faults[n]` into its n-th round trip; calls past the list run normally. */
export function faultyDb(faults: Fault[]) {
  let calls = 0;
  const db = interceptDb(env.DB, async (run) => {
    const fault = faults[calls++] ?? null;
    if (fault !== null && 'before' in fault) throw new Error(fault.before);
    const result = await run();
    if (fault !== null && 'after' in fault) throw new Error(fault.after);
    return result;
  });
  return { db, calls: () => calls };
}
