// A Durable Object's own schema, versioned in its own storage: the table schema_version holds the
// version its tables are at, and the object's class brings them to its own version by numbered
// steps the first time it starts (docs/storage.md, "Object schemas"). Step n takes version n - 1
// to n; each runs once, in one transaction with the version's update, so an object is always at
// exactly one version. An object from before versions has no row: version 0.
import { log } from '../core/log';

/** One step: statements on the object's database (no transaction of its own: the caller's). */
export type SchemaStep = (sql: SqlStorage) => void;

/** The version the object's tables are at (0: none recorded). */
export function schemaVersion(sql: SqlStorage): number {
  sql.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
  const [row] = sql.exec<{ version: number }>('SELECT MAX(version) AS version FROM schema_version').toArray();
  return row?.version ?? 0;
}

/** Applies the steps the object's tables lack, in order, each atomically. Returns the version reached. */
export function upgradeSchema(storage: DurableObjectStorage, steps: readonly SchemaStep[]): number {
  const from = schemaVersion(storage.sql);
  if (from > steps.length) {
    // Written by a newer release (this one was rolled back to): its steps only added, so this
    // code reads it as before.
    log('warn', { msg: 'object schema newer than this release', version: from, known: steps.length });
    return from;
  }
  for (let version = from + 1; version <= steps.length; version++) {
    const step = steps[version - 1] as SchemaStep;
    storage.transactionSync(() => {
      step(storage.sql);
      storage.sql.exec('DELETE FROM schema_version');
      storage.sql.exec('INSERT INTO schema_version (version) VALUES (?1)', version);
    });
  }
  if (from < steps.length) log('info', { msg: 'object schema upgraded', from, to: steps.length });
  return steps.length;
}

/**
 * Brings the object's tables to its class's version before anything else reaches it: call it in
 * the constructor (no call or alarm runs until it is done).
 */
export function startWithSchema(ctx: DurableObjectState, steps: readonly SchemaStep[]): void {
  void ctx.blockConcurrencyWhile(async () => {
    upgradeSchema(ctx.storage, steps);
  });
}
