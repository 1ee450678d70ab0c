// The webhooks table as the stores see it: its row, its columns, the audit record's columns, and
// the one ownership condition every statement uses. Webhook ids travel as decimal text, turned into
// INTEGER by SQLite (CAST) both ways, so an int64 is never rounded through a JavaScript double.

/** Who made a change, recorded with it. */
export interface Actor {
  appId: string;
  jti: string | null;
  requestId: string;
}

export const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

/**
 * Why it is disabled, as replies say it: for a webhook the service disabled for failing, the
 * destination API's refusal that named why ('forbidden', 'not_found') when there was one, as long
 * as it belongs to this disabling (a release before this one neither clears nor sets it) and the
 * webhook still delivers to an API (not an HTTP endpoint since, by a PATCH).
 */
const REASON = `CASE WHEN disabled_reason = 'failing' AND disabled_cause_at = disabled_at AND destination IS NOT NULL
    THEN COALESCE(disabled_cause, 'failing')
  ELSE disabled_reason END`;

// The whole row, as JSON text, for the audit record. SQLite writes the integer id exactly. The
// signing secrets are never part of it, nor the sealed credentials and sensitive headers.
export const ROW_JSON = `json_object(
    'webhook_id', webhook_id, 'app_id', app_id, 'url', url, 'is_enabled', is_enabled,
    'event_types', json(event_types), 'created_at', created_at, 'updated_at', updated_at,
    'description', description, 'rate_limit', rate_limit, 'filter', json(filter),
    'ordering', ordering, 'disabled_reason', ${REASON}, 'disabled_at', disabled_at,
    'destination', json(json_remove(destination, '$.sealed')), 'headers', json(json_remove(headers, '$.sealed')))`;

/** A webhook as the store returns it: the id as decimal text, `is_enabled` as stored (0/1). */
export interface WebhookRow {
  id: string;
  url: string;
  is_enabled: number;
  /** JSON text of the event types it receives; null: every type. */
  event_types: string | null;
  created_at: string;
  updated_at: string;
  /** Null for webhooks from before descriptions, and in rows recorded before them. */
  description: string | null;
  rate_limit: number | null;
  /** Its content filter, the JSON text as sent; null: none (and in rows recorded before filters). */
  filter: string | null;
  /** 'fifo': one delivery at a time, in order; null: none (and in rows recorded before ordering). */
  ordering: string | null;
  /**
   * Why it is disabled: 'gone', 'failing', 'forbidden', 'not_found' or 'application'; null while
   * enabled (and in rows recorded before reasons).
   */
  disabled_reason: string | null;
  /** When it was disabled; null while enabled (and in rows recorded before reasons). */
  disabled_at: string | null;
  /** Its first failed attempt since its last success; null while it is not failing (and in recorded rows). */
  failing_since: string | null;
  /** Where it delivers, JSON text without its credentials; null: an HTTP endpoint (and in recorded rows from before). */
  destination: string | null;
  /** Its custom headers, JSON text without the sensitive values; null: none. */
  headers: string | null;
}

/**
 * The WebhookRow columns (named with `prefix`), from the table's own columns or from the fields
 * of a row's JSON.
 */
const rowColumns = (
  column: (name: string) => string = (name) => (name === 'disabled_reason' ? REASON : name),
  prefix = '',
) =>
  `CAST(${column('webhook_id')} AS TEXT) AS ${prefix}id, ${[
    'url',
    'is_enabled',
    'event_types',
    'created_at',
    'updated_at',
    'description',
    'rate_limit',
    'filter',
    'ordering',
    'disabled_reason',
    'disabled_at',
    'failing_since',
  ]
    .map((name) => `${column(name)} AS ${prefix}${name}`)
    .join(', ')}, ${['destination', 'headers']
    .map((name) => `json_remove(${column(name)}, '$.sealed') AS ${prefix}${name}`)
    .join(', ')}`;
export const COLUMNS = rowColumns();
/** The WebhookRow of a webhook's row as JSON (an audit record's `row_before`, a key's `webhook_row`). */
export const columnsOf = (json: string, prefix: string) =>
  rowColumns((name) => `json_extract(${json}, '$.${name}')`, prefix);

/** The WebhookRow of columns named with `prefix`, or undefined when they are null (no such row). */
export function prefixed(row: Record<string, unknown>, prefix: string): WebhookRow | undefined {
  if (row[`${prefix}id`] === null) return undefined;
  const pick = (name: string) => row[`${prefix}${name}`];
  return {
    id: pick('id'),
    url: pick('url'),
    is_enabled: pick('is_enabled'),
    event_types: pick('event_types') ?? null,
    created_at: pick('created_at'),
    updated_at: pick('updated_at'),
    description: pick('description') ?? null,
    rate_limit: pick('rate_limit') ?? null,
    filter: pick('filter') ?? null,
    ordering: pick('ordering') ?? null,
    disabled_reason: pick('disabled_reason') ?? null,
    disabled_at: pick('disabled_at') ?? null,
    failing_since: pick('failing_since') ?? null,
    destination: pick('destination') ?? null,
    headers: pick('headers') ?? null,
  } as WebhookRow;
}

/** A statement's condition for the application's webhook: `?1` its id (decimal text), `?2` the application. */
export const OWNED = 'webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2';

export const AUDIT_COLUMNS = 'webhook_id, app_id, action, row_before, actor, actor_jti, request_id';

/** The id of the audit record an INSERT of one made, from its result; undefined when it made none. */
export const auditIdOf = (insert: D1Result | undefined) =>
  insert?.meta.changes === 1 ? Number(insert.meta.last_row_id) : undefined;
