// A webhook's health as its deliveries find it: when it started failing (cleared by a success), and
// the service disabling it (410 Gone, or failing for too long: its disabled_reason 'gone' or
// 'failing', or the API refusal that named why) with its audit record. Statements that the
// deliveries' record adds to its own batch.
import type { Db } from '../../platform/d1';
import { AUDIT_COLUMNS, NOW, ROW_JSON } from './rows';

/**
 * Which refusal of a destination's API a webhook disabled for failing was disabled by: its
 * credentials refused (403) or its queue, bus or topic missing (404); its disabled_reason.
 */
export type DisabledCause = 'forbidden' | 'not_found';

/** A webhook's health after this batch's attempts: `ok` when one succeeded. */
export interface HealthChange {
  webhook_id: string;
  ok: boolean;
  /** The first failure's time in this batch. */
  at: string;
}

/**
 * A webhook to disable if it still qualifies: it answered 410 Gone, or its first failure since
 * its last success is no later than `cutoff`.
 */
export interface DisableCandidate {
  webhook_id: string;
  gone: boolean;
  cutoff: string;
  request_id: string;
  /** A destination API's refusal among the failures: the disabled_reason it names, and why in words. */
  cause?: DisabledCause;
  why?: string;
}

/** The statements that record the webhooks' health and disable those that qualify (none when there is nothing to say). */
export function healthStatements(db: Db, health: HealthChange[], disable: DisableCandidate[]): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  if (health.length > 0) {
    statements.push(
      db
        .prepare(
          `UPDATE webhooks
           SET failing_since = CASE WHEN h.ok THEN NULL ELSE COALESCE(webhooks.failing_since, h.at) END
           FROM (SELECT CAST(json_extract(value, '$.webhook_id') AS INTEGER) AS id, json_extract(value, '$.ok') AS ok,
                   json_extract(value, '$.at') AS at
                 FROM json_each(?1)) AS h
           WHERE webhooks.webhook_id = h.id
             AND CASE WHEN h.ok THEN webhooks.failing_since IS NOT NULL ELSE webhooks.failing_since IS NULL END`,
        )
        .bind(JSON.stringify(health)),
    );
  }
  if (disable.length > 0) {
    const candidates = `(SELECT CAST(json_extract(value, '$.webhook_id') AS INTEGER) AS id,
        json_extract(value, '$.gone') AS gone, json_extract(value, '$.cutoff') AS cutoff,
        json_extract(value, '$.request_id') AS request_id, json_extract(value, '$.why') AS why,
        json_extract(value, '$.cause') AS cause
      FROM json_each(?1)) AS d`;
    const qualifies = `webhooks.is_enabled = 1 AND (d.gone OR webhooks.failing_since <= d.cutoff)`;
    statements.push(
      db
        .prepare(
          `INSERT INTO webhook_audit (${AUDIT_COLUMNS}, reason)
           SELECT webhooks.webhook_id, webhooks.app_id, 'disable', ${ROW_JSON}, 'system', NULL, d.request_id,
             CASE WHEN d.gone THEN 'the endpoint answered 410 Gone'
               ELSE 'every attempt failed since ' || webhooks.failing_since || COALESCE('; ' || d.why, '') END
           FROM webhooks JOIN ${candidates} ON webhooks.webhook_id = d.id
           WHERE ${qualifies}`,
        )
        .bind(JSON.stringify(disable)),
      db
        .prepare(
          `UPDATE webhooks SET is_enabled = 0, updated_at = ${NOW},
             disabled_reason = CASE WHEN d.gone THEN 'gone' ELSE 'failing' END, disabled_at = ${NOW},
             disabled_cause = CASE WHEN d.gone THEN NULL ELSE d.cause END,
             disabled_cause_at = CASE WHEN d.gone OR d.cause IS NULL THEN NULL ELSE ${NOW} END
           FROM ${candidates}
           WHERE webhooks.webhook_id = d.id AND ${qualifies}`,
        )
        .bind(JSON.stringify(disable)),
    );
  }
  return statements;
}
