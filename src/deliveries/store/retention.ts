// Retention in the endpoint object's database: what is past it goes, in bounded steps.

/** When the oldest delivery was created (ms), or null when there is none: retention's next work. */
export function oldestCreated(sql: SqlStorage): number | null {
  const [row] = sql.exec<{ at: string | null }>('SELECT MIN(created_at) AS at FROM deliveries').toArray();
  return row?.at == null ? null : Date.parse(row.at);
}

/**
 * Deletes deliveries created before `before` that have ended, with their attempts, and the
 * counters of hours that ended before `before`'s hour, at most `limit` of each; returns how many
 * rows went. A delivery still pending (recovered late in its life) stays until it ends.
 */
export function purgeDeliveries(storage: DurableObjectStorage, before: string, limit: number): number {
  const old = `SELECT delivery_id FROM deliveries
    WHERE created_at < ?1 AND status <> 'pending' ORDER BY created_at, delivery_id LIMIT ?2`;
  return storage.transactionSync(() => {
    const { sql } = storage;
    let rows = sql.exec(`DELETE FROM delivery_attempts WHERE delivery_id IN (${old})`, before, limit).rowsWritten;
    rows += sql.exec(`DELETE FROM deliveries WHERE delivery_id IN (${old})`, before, limit).rowsWritten;
    rows += sql.exec(
      `DELETE FROM delivery_stats WHERE hour IN (
         SELECT hour FROM delivery_stats WHERE hour < substr(?1, 1, 13) || ':00:00Z' ORDER BY hour LIMIT ?2)`,
      before,
      limit,
    ).rowsWritten;
    return rows;
  });
}

/** What the endpoint holds (counted before an erasure): its deliveries and their attempts. */
export function countHeld(sql: SqlStorage): { deliveries: number; attempts: number } {
  const [row] = sql
    .exec<{ deliveries: number; attempts: number }>(
      `SELECT (SELECT COUNT(*) FROM deliveries) AS deliveries, (SELECT COUNT(*) FROM delivery_attempts) AS attempts`,
    )
    .toArray();
  return { deliveries: row?.deliveries ?? 0, attempts: row?.attempts ?? 0 };
}

/**
 * Erases what the object holds of one application (the platform's operational endpoint holds every
 * application's deliveries): its deliveries with their attempts, and its archived ones, their slim
 * rows and the index of their R2 objects (each holds one application's deliveries, under its
 * `prefix`). Returns how many deliveries and attempts went (archived ones are counted by their
 * objects in R2, as an endpoint's erasure counts them).
 */
export function eraseApplicationRows(
  storage: DurableObjectStorage,
  appId: string,
  prefix: string,
): { deliveries: number; attempts: number } {
  return storage.transactionSync(() => {
    const { sql } = storage;
    const mine = 'SELECT delivery_id FROM deliveries WHERE app_id = ?1';
    const held = sql
      .exec<{ deliveries: number; attempts: number }>(
        `SELECT (SELECT COUNT(*) FROM deliveries WHERE app_id = ?1) AS deliveries,
           (SELECT COUNT(*) FROM delivery_attempts WHERE delivery_id IN (${mine})) AS attempts`,
        appId,
      )
      .one();
    sql.exec(`DELETE FROM delivery_attempts WHERE delivery_id IN (${mine})`, appId);
    sql.exec('DELETE FROM deliveries WHERE app_id = ?1', appId);
    const objects = 'SELECT object_id FROM archive_objects WHERE substr(key, 1, length(?1)) = ?1';
    sql.exec(`DELETE FROM archived WHERE object_id IN (${objects})`, prefix);
    sql.exec(`DELETE FROM archive_objects WHERE object_id IN (${objects})`, prefix);
    return { deliveries: held.deliveries, attempts: held.attempts };
  });
}
