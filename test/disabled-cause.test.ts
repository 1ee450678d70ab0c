// Which refusal of a destination's API disabled a webhook: the migration that adds disabled_cause
// names it for webhooks the release before disabled, from their disable record, and the release
// before's own statements keep working on the upgraded table.
import { applyD1Migrations, env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { refusalOf } from '../src/deliveries/destinations/provider';

describe('migration 0012 on a database with webhooks disabled by the release before', () => {
  it('names the API refusal of each destination it disabled for failing, from its disable record, and nothing else', async () => {
    const db = env.UPGRADE_DB;
    await applyD1Migrations(
      db,
      env.TEST_MIGRATIONS.filter((m) => m.name < '0012'),
    );
    const at = '2026-11-21T11:45:00.000Z';
    const queue = (n: number) =>
      JSON.stringify({ type: 'aws_sqs', queue_url: `https://sqs.eu-west-1.amazonaws.com/123456789012/q${n}` });
    const reasons = [
      // The release before's own words for an API's 403 and 404, then a 500 and a 410.
      'every attempt failed since 2026-11-20T10:15:00.000Z; the destination answered 403 Forbidden: access denied (its credentials or their permissions)',
      'every attempt failed since 2026-11-20T10:15:00.000Z; the destination answered 404 Not Found: it does not exist',
      'every attempt failed since 2026-11-20T10:15:00.000Z',
      'every attempt failed since 2026-11-20T10:15:00.000Z; the destination answered 403 Forbidden: access denied (its credentials or their permissions)',
    ];
    await db.batch([
      db
        .prepare(
          `INSERT INTO webhooks (webhook_id, app_id, url, is_enabled, disabled_reason, disabled_at, destination) VALUES
           (1, 'app-m', 'aws_sqs:1', 0, 'failing', ?1, ?2), (2, 'app-m', 'aws_sqs:2', 0, 'failing', ?1, ?3),
           (3, 'app-m', 'aws_sqs:3', 0, 'failing', ?1, ?4), (4, 'app-m', 'https://m.example.com/4', 0, 'failing', ?1, NULL),
           (5, 'app-m', 'aws_sqs:5', 1, NULL, NULL, ?5)`,
        )
        .bind(at, queue(1), queue(2), queue(3), queue(5)),
      ...reasons.map((reason, i) =>
        db
          .prepare(
            `INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, request_id, created_at, reason)
             VALUES (?1, 'app-m', 'disable', '{}', 'system', 'r', ?2, ?3)`,
          )
          .bind(i + 1, at, reason),
      ),
    ]);
    await applyD1Migrations(db, env.TEST_MIGRATIONS);
    const { results } = await db
      .prepare('SELECT webhook_id, disabled_cause, disabled_cause_at FROM webhooks ORDER BY webhook_id')
      .all();
    expect(results).toEqual([
      { webhook_id: 1, disabled_cause: 'forbidden', disabled_cause_at: at },
      { webhook_id: 2, disabled_cause: 'not_found', disabled_cause_at: at },
      { webhook_id: 3, disabled_cause: null, disabled_cause_at: at },
      // An HTTP endpoint's 403 is its own, not an API's.
      { webhook_id: 4, disabled_cause: null, disabled_cause_at: null },
      { webhook_id: 5, disabled_cause: null, disabled_cause_at: null },
    ]);
    // The release before's PUT (its statement, which knows nothing of causes) still changes exactly its row.
    const enable = await db
      .prepare(
        `UPDATE webhooks SET is_enabled = 1, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), failing_since = NULL,
           disabled_reason = NULL, disabled_at = NULL
         WHERE webhook_id = 1 AND app_id = 'app-m'`,
      )
      .run();
    expect(enable.meta.changes).toBe(1);
    // Only the two causes can be stored.
    await expect(
      db.prepare(`UPDATE webhooks SET disabled_cause = 'bored' WHERE webhook_id = 2`).run(),
    ).rejects.toThrow();
  });
});

describe('refusalOf: which API replies name why a destination fails for good', () => {
  const result = (status: number | null, body: unknown) => ({
    status,
    error: null,
    body: body === null ? null : JSON.stringify(body),
    retryAfter: null,
    durationMs: 1,
  });
  it('names 403, 404 and the APIs’ own codes for the same, and nothing else (not a 401: an expired token)', () => {
    expect(refusalOf(result(403, { message: 'denied' }))).toEqual({ cause: 'forbidden', answer: '403 Forbidden' });
    expect(refusalOf(result(404, { error: { status: 'NOT_FOUND' } }))).toEqual({
      cause: 'not_found',
      answer: '404 Not Found',
    });
    expect(refusalOf(result(400, { __type: 'com.amazonaws.sqs#QueueDoesNotExist' }))).toEqual({
      cause: 'not_found',
      answer: '400 (QueueDoesNotExist)',
    });
    expect(refusalOf(result(400, { __type: 'UnrecognizedClientException' }))).toEqual({
      cause: 'forbidden',
      answer: '400 (UnrecognizedClientException)',
    });
    expect(refusalOf(result(400, { error: 'invalid_grant' }))).toEqual({
      cause: 'forbidden',
      answer: '400 (invalid_grant)',
    });
    // Retried failures, and codes that are no refusal (an object's own keys only).
    for (const [status, body] of [
      [401, { error: { code: 401, status: 'UNAUTHENTICATED' } }],
      [429, { __type: 'ThrottlingException' }],
      [500, { __type: 'AccessDeniedException' }],
      [400, { __type: 'constructor' }],
      [400, { __type: '#__proto__' }],
      [400, { error: 'toString' }],
      [null, null],
      [200, { FailedEntryCount: 1 }],
    ] as const)
      expect(refusalOf(result(status, body))).toBeUndefined();
  });
});
