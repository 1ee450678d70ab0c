// Who receives published events: the enabled webhooks of the publishing applications, with the
// event types each takes and its content filter, as D1 holds them now. One round trip.
import type { Db } from '../../platform/d1';

/** An enabled webhook that events may be delivered to. */
export interface Subscriber {
  webhook_id: string;
  app_id: string;
  /** JSON text of the event types it receives; null: every type. */
  event_types: string | null;
  /** JSON text of its content filter; null: none. */
  filter: string | null;
}

/** The enabled webhooks of these applications, by id. */
export async function readSubscribers(db: Db, appIds: string[]): Promise<Subscriber[]> {
  const { results } = await db
    .prepare(
      `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, event_types, filter FROM webhooks
       WHERE app_id IN (SELECT value FROM json_each(?1)) AND is_enabled = 1
       ORDER BY webhook_id`,
    )
    .bind(JSON.stringify(appIds))
    .all<Subscriber>();
  return results;
}
