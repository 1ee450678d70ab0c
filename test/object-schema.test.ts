// Objects upgrade themselves: an Endpoint and an Application written by the release before (whose
// tables were made on every start by `CREATE ... IF NOT EXISTS`, with no version) start under this
// release's classes with all they held: the log, attempts, counters and source keys read as before,
// a pending delivery and the outbox are sent by their alarms once, nothing twice.
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ENDPOINT_SCHEMA } from '../src/deliveries/store/schema';
import { APPLICATION_SCHEMA } from '../src/events/store/schema';
import {
  applicationOf,
  applicationSql,
  deliveriesOfEvent,
  endpointOf,
  endpointSql,
  storedDelivery,
} from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { eventRequest, fetchAndWait, registerWebhook } from './helpers/requests';
import { bearer, freshApp, platformToken } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

// ---- the release before (6569f6d): its exact statements, run by every object at every start ----
/** src/deliveries/store/endpoint.ts of 6569f6d. */
const ENDPOINT_BEFORE = `
CREATE TABLE IF NOT EXISTS deliveries (
  delivery_id     INTEGER PRIMARY KEY,
  event_id        TEXT    NOT NULL,
  message_id      TEXT    NOT NULL,
  app_id          TEXT    NOT NULL,
  type            TEXT    NOT NULL,
  payload         TEXT    NOT NULL,
  status          TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  schedule_start  INTEGER NOT NULL DEFAULT 0,
  recovery_id     TEXT,
  next_attempt_at TEXT,
  last_attempt_at TEXT,
  last_status     INTEGER,
  last_error      TEXT,
  created_at      TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS deliveries_by_age ON deliveries (created_at);
CREATE TABLE IF NOT EXISTS delivery_attempts (
  delivery_id  INTEGER NOT NULL,
  attempt      INTEGER NOT NULL,
  attempted_at TEXT    NOT NULL,
  status       INTEGER,
  error        TEXT,
  duration_ms  INTEGER NOT NULL,
  body         TEXT,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS delivery_stats (
  hour      TEXT    PRIMARY KEY,
  pending   INTEGER NOT NULL DEFAULT 0,
  succeeded INTEGER NOT NULL DEFAULT 0,
  failed    INTEGER NOT NULL DEFAULT 0,
  cancelled INTEGER NOT NULL DEFAULT 0,
  attempts  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS delivery_stats_created AFTER INSERT ON deliveries
BEGIN
  INSERT INTO delivery_stats (hour, pending, succeeded, failed, cancelled)
  VALUES (substr(NEW.created_at, 1, 13) || ':00:00Z', NEW.status = 'pending', NEW.status = 'succeeded',
    NEW.status = 'failed', NEW.status = 'cancelled')
  ON CONFLICT (hour) DO UPDATE SET pending = pending + excluded.pending, succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed, cancelled = cancelled + excluded.cancelled;
END;
CREATE TRIGGER IF NOT EXISTS delivery_stats_status AFTER UPDATE OF status ON deliveries
WHEN OLD.status <> NEW.status
BEGIN
  INSERT INTO delivery_stats (hour, pending, succeeded, failed, cancelled)
  VALUES (substr(NEW.created_at, 1, 13) || ':00:00Z',
    (NEW.status = 'pending') - (OLD.status = 'pending'), (NEW.status = 'succeeded') - (OLD.status = 'succeeded'),
    (NEW.status = 'failed') - (OLD.status = 'failed'), (NEW.status = 'cancelled') - (OLD.status = 'cancelled'))
  ON CONFLICT (hour) DO UPDATE SET pending = pending + excluded.pending, succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed, cancelled = cancelled + excluded.cancelled;
END;
CREATE TRIGGER IF NOT EXISTS delivery_stats_attempt AFTER INSERT ON delivery_attempts
BEGIN
  INSERT INTO delivery_stats (hour, attempts) VALUES (substr(NEW.attempted_at, 1, 13) || ':00:00Z', 1)
  ON CONFLICT (hour) DO UPDATE SET attempts = attempts + 1;
END;
CREATE TABLE IF NOT EXISTS endpoint (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`;
/** src/events/store.ts of 6569f6d. */
const APPLICATION_BEFORE = `
CREATE TABLE IF NOT EXISTS events (
  event_id   TEXT PRIMARY KEY,
  source_key TEXT UNIQUE,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_by_age ON events (created_at);
CREATE TABLE IF NOT EXISTS deliveries (
  delivery_id INTEGER PRIMARY KEY,
  webhook_id  TEXT    NOT NULL,
  created_at  TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_by_age ON deliveries (created_at);
CREATE TABLE IF NOT EXISTS outbox (
  event_id TEXT PRIMARY KEY,
  event    TEXT NOT NULL,
  targets  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ids (name TEXT PRIMARY KEY, last TEXT NOT NULL) WITHOUT ROWID;
`;

/**
 * Makes the object's database what the release before left: everything this release's class made
 * as it started is dropped (its version too), then the release before's statements run.
 */
function asReleaseBefore(sql: SqlStorage, statements: string): void {
  const tables = sql
    .exec<{ name: string }>(
      `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'`,
    )
    .toArray();
  for (const { name } of tables) sql.exec(`DROP TABLE "${name}"`);
  sql.exec(statements);
}

/** The object's tables, indexes and triggers, as SQLite keeps them. */
const schemaOf = (sql: SqlStorage) =>
  sql
    .exec<{ type: string; name: string; sql: string }>(
      `SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%' ORDER BY type, name`,
    )
    .toArray();

const iso = (ms: number) => new Date(ms).toISOString();

describe('an Endpoint written by the release before', () => {
  it("starts at this release's version with every delivery, attempt and counter (failed attempts counted from the attempts kept); its alarm sends the due one once and nothing twice", async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const { requests } = receiver(() => new Response('ok'));
    const stub = endpointOf(hook.id);
    const now = Date.now();
    const created = iso(now - 3_600_000);
    // succeeded (1 attempt), failed (2), cancelled (0), pending and due (1 refused), pending later (1).
    const rows: [string, string, number, string | null][] = [
      ['9007199254740993', 'succeeded', 1, null],
      ['9007199254740994', 'failed', 2, null],
      ['9007199254740995', 'cancelled', 0, null],
      ['9007199254740996', 'pending', 1, iso(now - 1000)],
      ['9007199254740997', 'pending', 1, iso(now + 3_600_000)],
    ];
    const before = await runInDurableObject(stub, async (_instance, state) => {
      const { sql } = state.storage;
      asReleaseBefore(sql, ENDPOINT_BEFORE);
      sql.exec(`INSERT INTO endpoint (key, value) VALUES ('webhook_id', ?1)`, hook.id);
      for (const [id, status, attempts, next] of rows) {
        const eventId = `evt_${id}`;
        sql.exec(
          `INSERT INTO deliveries (delivery_id, event_id, message_id, app_id, type, payload, status, attempts,
             next_attempt_at, last_attempt_at, last_status, last_error, created_at)
           VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, 'NEW_NFT', ?5, 'pending', 0, ?6, NULL, NULL, NULL, ?7)`,
          id,
          eventId,
          `msg_${id}`,
          app,
          `{"type":"NEW_NFT","timestamp":"${created}","data":{"id":"${id}"}}`,
          next,
          created,
        );
        for (let n = 1; n <= attempts; n++) {
          sql.exec(
            `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
             VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, 12, ?6)`,
            id,
            n,
            created,
            status === 'succeeded' ? 200 : null,
            status === 'succeeded' ? null : 'connection',
            status === 'succeeded' ? 'ok' : null,
          );
        }
        // The state it came to, as the release before recorded it (the triggers count the change).
        sql.exec(
          `UPDATE deliveries SET status = ?2, attempts = ?3, last_attempt_at = CASE WHEN ?3 > 0 THEN ?4 END,
             last_status = CASE WHEN ?2 = 'succeeded' THEN 200 END,
             last_error = CASE WHEN ?3 > 0 AND ?2 <> 'succeeded' THEN 'connection' END
           WHERE delivery_id = CAST(?1 AS INTEGER)`,
          id,
          status,
          attempts,
          created,
        );
      }
      // Its alarm, set for later (runDurableObjectAlarm rings it when the test says).
      await state.storage.setAlarm(now + 600_000);
      return {
        deliveries: sql.exec('SELECT * FROM deliveries ORDER BY delivery_id').toArray(),
        attempts: sql.exec('SELECT * FROM delivery_attempts ORDER BY delivery_id, attempt').toArray(),
        stats: sql.exec('SELECT * FROM delivery_stats ORDER BY hour').toArray(),
      };
    });
    expect(before.stats).toHaveLength(1);
    expect(before.stats[0]).toMatchObject({ pending: 2, succeeded: 1, failed: 1, cancelled: 1, attempts: 5 });
    const fresh = await runInDurableObject(endpointOf(`${hook.id}-fresh`), (_i, state) => schemaOf(state.storage.sql));

    // This release's class starts on that storage.
    await evictDurableObject(stub);
    expect(await endpointSql(hook.id, 'SELECT version FROM schema_version')).toEqual([
      { version: ENDPOINT_SCHEMA.length },
    ]);
    expect(await runInDurableObject(stub, (_i, state) => schemaOf(state.storage.sql))).toEqual(fresh);
    expect(await endpointSql(hook.id, 'SELECT * FROM deliveries ORDER BY delivery_id')).toEqual(before.deliveries);
    expect(await endpointSql(hook.id, 'SELECT * FROM delivery_attempts ORDER BY delivery_id, attempt')).toEqual(
      before.attempts,
    );
    // Read as before: the log (newest first, the message id as event_id), one delivery with its attempts, the counters.
    const page = await stub.list({ limit: 10 });
    expect(page.rows.map((r) => [r.delivery_id, r.message_id, r.status, r.attempts])).toEqual(
      [...rows].reverse().map(([id, status, attempts]) => [id, `msg_${id}`, status, attempts]),
    );
    const failed = await stub.get('9007199254740994', app);
    expect(failed?.attempts.map((a) => [a.attempt, a.error])).toEqual([
      [1, 'connection'],
      [2, 'connection'],
    ]);
    expect(await stub.stats(created.slice(0, 13))).toEqual(
      before.stats.map(({ hour, pending, succeeded, failed, cancelled, attempts }) => ({
        hour,
        pending,
        succeeded,
        failed,
        cancelled,
        attempts,
        // Four connection failures: every attempt but the succeeded delivery's.
        failed_attempts: 4,
      })),
    );

    // The alarm the release before set: the due delivery is sent once, as the same message.
    expect(requests).toHaveLength(0);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(requests).toHaveLength(1);
    expect(requests[0]?.headers['webhook-id']).toBe('msg_9007199254740996');
    expect(JSON.parse(requests[0]?.body ?? '')).toEqual({
      type: 'NEW_NFT',
      timestamp: created,
      data: { id: '9007199254740996' },
    });
    expect(await storedDelivery(hook.id, '9007199254740996')).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(await storedDelivery(hook.id, '9007199254740997')).toMatchObject({ status: 'pending', attempts: 1 });
    // Nothing twice: another alarm, another start.
    await runDurableObjectAlarm(stub);
    await evictDurableObject(stub);
    await runDurableObjectAlarm(stub);
    expect(requests).toHaveLength(1);
    expect(await endpointSql(hook.id, 'SELECT version FROM schema_version')).toEqual([
      { version: ENDPOINT_SCHEMA.length },
    ]);
    expect(await endpointSql(hook.id, 'SELECT COUNT(*) AS n FROM delivery_attempts')).toEqual([{ n: 6 }]);
    // The counters went on from the release before's: the sent one succeeded, its attempt counted
    // in the hour it was made.
    const after = await stub.stats(created.slice(0, 13));
    const total = (k: 'pending' | 'succeeded' | 'failed' | 'cancelled' | 'attempts') =>
      after.reduce((sum, h) => sum + h[k], 0);
    expect([total('pending'), total('succeeded'), total('failed'), total('cancelled'), total('attempts')]).toEqual([
      1, 2, 1, 1, 6,
    ]);
    expect(after.find((h) => h.hour === `${created.slice(0, 13)}:00:00Z`)).toMatchObject({ pending: 1, succeeded: 2 });
  });
});

describe('an Application written by the release before', () => {
  it('starts at version 2 (step 2 notes the endpoints of its index) with its events, index, outbox and ids; its alarm hands the outbox over once', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    receiver(() => new Response('ok'));
    const stub = applicationOf(app);
    const created = iso(Date.now() - 60_000);
    const payload = `{"type":"NEW_NFT","timestamp":"${created}","data":{}}`;
    const outboxEvent = {
      event_id: 'evt_outbox',
      message_id: 'evt_outbox',
      app_id: app,
      type: 'NEW_NFT',
      payload,
      created_at: created,
    };
    const before = await runInDurableObject(stub, async (_instance, state) => {
      const { sql } = state.storage;
      asReleaseBefore(sql, APPLICATION_BEFORE);
      sql.exec(
        `INSERT INTO events (event_id, source_key, created_at) VALUES ('evt_published', 'id:pub-1', ?1), ('evt_outbox', NULL, ?1)`,
        created,
      );
      sql.exec(
        `INSERT INTO deliveries (delivery_id, webhook_id, created_at) VALUES (111, ?1, ?2), (112, ?1, ?2)`,
        hook.id,
        created,
      );
      // The handover of delivery 112 did not finish: it is in the outbox, the alarm set to finish it.
      sql.exec(
        `INSERT INTO outbox (event_id, event, targets) VALUES ('evt_outbox', ?1, ?2)`,
        JSON.stringify(outboxEvent),
        JSON.stringify([['112', hook.id]]),
      );
      sql.exec(`INSERT INTO ids (name, last) VALUES ('delivery', '112')`);
      await state.storage.setAlarm(Date.now() + 600_000);
      return {
        events: sql.exec('SELECT * FROM events ORDER BY event_id').toArray(),
        deliveries: sql.exec('SELECT * FROM deliveries ORDER BY delivery_id').toArray(),
      };
    });
    const fresh = await runInDurableObject(applicationOf(`${app}-fresh`), (_i, state) => schemaOf(state.storage.sql));

    await evictDurableObject(stub);
    // Version 1, then this release's later steps.
    expect(await applicationSql(app, 'SELECT version FROM schema_version')).toEqual([
      { version: APPLICATION_SCHEMA.length },
    ]);
    expect(await applicationSql(app, 'SELECT webhook_id FROM endpoints')).toEqual([{ webhook_id: hook.id }]);
    expect(await runInDurableObject(stub, (_i, state) => schemaOf(state.storage.sql))).toEqual(fresh);
    expect(await applicationSql(app, 'SELECT * FROM events ORDER BY event_id')).toEqual(before.events);
    expect(await applicationSql(app, 'SELECT * FROM deliveries ORDER BY delivery_id')).toEqual(before.deliveries);
    expect(await stub.locate('111')).toBe(hook.id);

    // Its alarm hands the outbox over: the endpoint holds delivery 112, once.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await applicationSql(app, 'SELECT COUNT(*) AS n FROM outbox')).toEqual([{ n: 0 }]);
    expect(await storedDelivery(hook.id, '112')).toMatchObject({ event_id: 'evt_outbox', payload });
    await runDurableObjectAlarm(stub);
    expect(await endpointSql(hook.id, 'SELECT COUNT(*) AS n FROM deliveries')).toEqual([{ n: 1 }]);

    // An id published under the release before is the same event; a new one gets an id after its last.
    const publish = async (id: string) =>
      (
        await expectValue<{ event_id: string }>(
          await fetchAndWait(
            {},
            eventRequest({ app_id: app, type: 'NEW_NFT', data: {}, id }, bearer(await platformToken())),
          ),
          202,
        )
      ).value.event_id;
    expect(await publish('pub-1')).toBe('evt_published');
    expect(await endpointSql(hook.id, 'SELECT COUNT(*) AS n FROM deliveries')).toEqual([{ n: 1 }]);
    const fresher = await publish('pub-2');
    // The new delivery's id carries its endpoint's number (step 4 numbered the endpoint noted
    // before): from 2^52, below 2^53 (exact in every JSON client), and no index row for it.
    const [made] = await deliveriesOfEvent(hook.id, fresher);
    expect(BigInt(made ?? '0')).toBeGreaterThanOrEqual(2n ** 52n);
    expect(BigInt(made ?? '0')).toBeLessThanOrEqual(BigInt(Number.MAX_SAFE_INTEGER));
    expect(await storedDelivery(hook.id, made ?? '')).toMatchObject({ event_id: fresher });
    expect(await applicationSql(app, 'SELECT webhook_id, n FROM endpoints')).toEqual([{ webhook_id: hook.id, n: 1 }]);
    expect(await applicationSql(app, 'SELECT * FROM deliveries ORDER BY delivery_id')).toEqual(before.deliveries);
    // Both are found by their ids: the old one by its index row, the new one by the id alone.
    expect(await stub.locate('111')).toBe(hook.id);
    expect(await stub.locate('112')).toBe(hook.id);
    expect(await stub.locate(made ?? '')).toBe(hook.id);
    expect(await stub.locate('113')).toBeNull();
  });
});
