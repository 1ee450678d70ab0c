// What the endpoint object keeps to tell when its endpoint is failing or recovered: one small JSON
// value in its `endpoint` table (at most an hour of per-minute counts, and each threshold's last
// alert), and the facts of deliveries that ended failed. Synchronous statements on its storage.

/** A minute of attempts: its start (ms), attempts, failed ones, the first failure's time (ms) or null. */
export type MinuteCounts = [minute: number, attempts: number, failed: number, firstFailure: number | null];

/** The endpoint's failure window (the last hour, by minute) and its alerts. */
export interface AlertState {
  window: MinuteCounts[];
  /** Each failure threshold that fired ("0.5", "0.9"): when (ms), and whether a success came since. */
  fired: Record<string, { at: number; success: boolean }>;
  /** endpoint.failing was sent and no success came since: the next success is endpoint.recovered. */
  failing: boolean;
}

const KEY = 'alerts';

/** The endpoint's alert state (a fresh one when it has none yet). */
export function readAlerts(sql: SqlStorage): AlertState {
  const [row] = sql.exec<{ value: string }>(`SELECT value FROM endpoint WHERE key = ?1`, KEY).toArray();
  return row === undefined ? { window: [], fired: {}, failing: false } : (JSON.parse(row.value) as AlertState);
}

export function writeAlerts(sql: SqlStorage, state: AlertState): void {
  sql.exec(
    `INSERT INTO endpoint (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    KEY,
    JSON.stringify(state),
  );
}

/** What a delivery.exhausted event says of a delivery besides its attempts. */
export interface EndedDelivery {
  delivery_id: string;
  event_id: string;
  type: string;
}

/** The event id and type of these deliveries. */
export function endedDeliveries(sql: SqlStorage, ids: string[]): EndedDelivery[] {
  if (ids.length === 0) return [];
  return sql
    .exec<EndedDelivery & Record<string, SqlStorageValue>>(
      `SELECT CAST(delivery_id AS TEXT) AS delivery_id, event_id, type FROM deliveries
       WHERE delivery_id IN (SELECT CAST(value AS INTEGER) FROM json_each(?1))`,
      JSON.stringify(ids),
    )
    .toArray();
}

/** The greatest delivery id here (decimal text), or null. */
export function lastDeliveryId(sql: SqlStorage): string | null {
  const [row] = sql
    .exec<{ id: string | null }>(`SELECT CAST(MAX(delivery_id) AS TEXT) AS id FROM deliveries`)
    .toArray();
  return row?.id ?? null;
}
