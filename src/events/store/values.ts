// Value sets in the application object's database: each webhook's set of strings (what a filter's
// `$in_set` looks up), one indexed row per value, and each set's size kept beside it so a change
// never counts its rows. Values arrive normalised (core/filter/values.ts: addresses lower-cased).

/** A page of a set's values, in order, after `after` (exclusive; undefined: from the first). */
export function pageValues(sql: SqlStorage, webhookId: string, after: string | undefined, limit: number): string[] {
  return sql
    .exec<{ value: string }>(
      `SELECT value FROM webhook_values WHERE webhook_id = ?1 AND value > ?2 ORDER BY value LIMIT ?3`,
      webhookId,
      after ?? '',
      limit,
    )
    .toArray()
    .map((row) => row.value);
}

/** How many values the webhook's set holds. */
export function countValues(sql: SqlStorage, webhookId: string): number {
  const [row] = sql
    .exec<{ count: number }>('SELECT count FROM value_counts WHERE webhook_id = ?1', webhookId)
    .toArray();
  return row?.count ?? 0;
}

/** Whether the webhook's set holds `value`: one lookup in the primary key, whatever the set's size. */
export const hasValue = (sql: SqlStorage, webhookId: string, value: string): boolean =>
  sql.exec('SELECT 1 FROM webhook_values WHERE webhook_id = ?1 AND value = ?2', webhookId, value).toArray().length > 0;

/**
 * Adds and removes values (present ones added, absent ones removed change nothing) and returns
 * the set's size after. Call it in a transaction: the caller rolls back a size it refuses.
 */
export function changeValues(sql: SqlStorage, webhookId: string, add: string[], remove: string[]): number {
  let count = countValues(sql, webhookId);
  for (const value of add) {
    count += sql.exec(
      'INSERT OR IGNORE INTO webhook_values (webhook_id, value) VALUES (?1, ?2)',
      webhookId,
      value,
    ).rowsWritten;
  }
  for (const value of remove) {
    count -= sql.exec('DELETE FROM webhook_values WHERE webhook_id = ?1 AND value = ?2', webhookId, value).rowsWritten;
  }
  if (count === 0) sql.exec('DELETE FROM value_counts WHERE webhook_id = ?1', webhookId);
  else {
    sql.exec(
      `INSERT INTO value_counts (webhook_id, count) VALUES (?1, ?2)
       ON CONFLICT (webhook_id) DO UPDATE SET count = excluded.count`,
      webhookId,
      count,
    );
  }
  return count;
}

/** Deletes the webhook's set (its webhook was deleted). Returns the values deleted. */
export function dropValues(sql: SqlStorage, webhookId: string): number {
  sql.exec('DELETE FROM value_counts WHERE webhook_id = ?1', webhookId);
  return sql.exec('DELETE FROM webhook_values WHERE webhook_id = ?1', webhookId).rowsWritten;
}

/** What a value set's change did: its size after; `full`: it would pass the limit, nothing changed. */
export interface ValuesChange {
  count: number;
  full: boolean;
}

/** Thrown in a value set's transaction to roll it back. */
class SetFull extends Error {}

/** Adds and removes values of the webhook's set, all or nothing: past `max` values nothing changes. */
export function changeValuesAtMost(
  storage: DurableObjectStorage,
  webhookId: string,
  add: string[],
  remove: string[],
  max: number,
): ValuesChange {
  try {
    return storage.transactionSync(() => {
      const count = changeValues(storage.sql, webhookId, add, remove);
      if (count > max) throw new SetFull();
      return { count, full: false };
    });
  } catch (err) {
    if (err instanceof SetFull) return { count: countValues(storage.sql, webhookId), full: true };
    throw err;
  }
}
