// The application's endpoints that hold deliveries: the webhooks it has ever handed deliveries to
// (one row per webhook, written once). A change of a webhook that never had a delivery has no
// sending to stop, so its endpoint's object is not woken (nor made) to be told.

/** Notes that these webhooks' endpoints hold deliveries (once each; a repeat writes nothing). */
export function rememberEndpoints(sql: SqlStorage, webhookIds: string[]): void {
  for (const id of webhookIds) sql.exec('INSERT OR IGNORE INTO endpoints (webhook_id) VALUES (?1)', id);
}

/** Whether the webhook's endpoint was ever handed a delivery by this application. */
export function holdsDeliveries(sql: SqlStorage, webhookId: string): boolean {
  return sql.exec('SELECT 1 FROM endpoints WHERE webhook_id = ?1', webhookId).toArray().length > 0;
}

/** Every webhook whose endpoint this application ever handed a delivery (erasure, retention changes). */
export const endpointsHeld = (sql: SqlStorage): string[] =>
  sql
    .exec<{ webhook_id: string }>('SELECT webhook_id FROM endpoints')
    .toArray()
    .map((r) => r.webhook_id);
