// The outbox in the application object's database: deliveries stored but not yet handed to their
// endpoints' objects.
import type { Handover, NewDelivery, Target } from './events';

/**
 * The outbox: at most `limit` events with deliveries still to hand over, in the order they were
 * stored (by their first delivery's id: an event's deliveries are made in order, and ids only
 * grow), so a FIFO endpoint is handed its deliveries in order.
 */
export function outbox(sql: SqlStorage, limit: number): Handover[] {
  return sql
    .exec<{ event_id: string; event: string; targets: string }>(
      `SELECT event_id, event, targets FROM outbox
       ORDER BY CAST(json_extract(targets, '$[0][0]') AS INTEGER)
       LIMIT ?1`,
      limit,
    )
    .toArray()
    .map((row) => {
      const body = JSON.parse(row.event) as Omit<NewDelivery, 'delivery_id'>;
      const targets = JSON.parse(row.targets) as Target[];
      const deliveries = targets.map(([id, webhookId]) => ({ webhookId, delivery: { delivery_id: id, ...body } }));
      return { eventId: row.event_id, deliveries };
    });
}

/**
 * What is left of the handovers once the webhooks of `failed` could not take theirs: an event
 * with nothing left leaves the outbox, the others keep only those.
 */
export function handedOver(sql: SqlStorage, handovers: Handover[], failed: ReadonlySet<string>): void {
  const done: string[] = [];
  for (const h of handovers) {
    const left: Target[] = h.deliveries
      .filter((d) => failed.has(d.webhookId))
      .map((d) => [d.delivery.delivery_id, d.webhookId]);
    if (left.length === 0) done.push(h.eventId);
    else if (left.length < h.deliveries.length) {
      sql.exec('UPDATE outbox SET targets = ?2 WHERE event_id = ?1', h.eventId, JSON.stringify(left));
    }
  }
  // The events handed over whole leave in one statement.
  if (done.length === 1) sql.exec('DELETE FROM outbox WHERE event_id = ?1', done[0] as string);
  else if (done.length > 1) {
    sql.exec('DELETE FROM outbox WHERE event_id IN (SELECT value FROM json_each(?1))', JSON.stringify(done));
  }
}

export const outboxEmpty = (sql: SqlStorage) =>
  sql.exec<{ n: number }>('SELECT EXISTS (SELECT 1 FROM outbox) AS n').one().n === 0;
