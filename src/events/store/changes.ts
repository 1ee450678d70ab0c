// The newest webhook change the application's object was told of (its audit record's id), kept
// in the ids table: a publish whose subscribers were read before it reads them again.

/** The newest change told (0: none). */
export function lastChange(sql: SqlStorage): number {
  const [row] = sql.exec<{ last: string }>(`SELECT last FROM ids WHERE name = 'webhook_change'`).toArray();
  return row === undefined ? 0 : Number(row.last);
}

/** Notes change `auditId`, keeping the newest; returns the newest. */
export function noteChange(sql: SqlStorage, auditId: number): number {
  const newest = Math.max(lastChange(sql), auditId);
  sql.exec(
    `INSERT INTO ids (name, last) VALUES ('webhook_change', ?1) ON CONFLICT (name) DO UPDATE SET last = excluded.last`,
    String(newest),
  );
  return newest;
}
