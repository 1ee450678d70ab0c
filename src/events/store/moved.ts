// The move's landing in the application object's database: events and index rows moved from D1.

/** An event moved from D1, and the deliveries it had there. */
export interface MovedEvent {
  event_id: string;
  source_key: string | null;
  created_at: string;
}

/** Events and the index of deliveries moved from D1; what is here already stays as it is. */
export function insertMovedEvents(
  sql: SqlStorage,
  events: MovedEvent[],
  deliveries: { delivery_id: string; webhook_id: string; created_at: string }[],
): void {
  for (const e of events) {
    sql.exec(
      'INSERT OR IGNORE INTO events (event_id, source_key, created_at) VALUES (?1, ?2, ?3)',
      e.event_id,
      e.source_key,
      e.created_at,
    );
  }
  for (const d of deliveries) {
    sql.exec(
      'INSERT OR IGNORE INTO deliveries (delivery_id, webhook_id, created_at) VALUES (CAST(?1 AS INTEGER), ?2, ?3)',
      d.delivery_id,
      d.webhook_id,
      d.created_at,
    );
  }
}
