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

/**
 * The application's enabled webhooks (as readSubscribers gives them), and the URL of its webhook
 * `webhookId`, enabled or not (null: it has none such): who hears of an operational event about
 * that webhook, and where it is. One round trip.
 */
export async function readSubscribersAbout(
  db: Db,
  appId: string,
  webhookId: string,
): Promise<{ subscribers: Subscriber[]; url: string | null }> {
  const { results } = await db
    .prepare(
      `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, event_types, filter, is_enabled, url FROM webhooks
       WHERE app_id = ?1 AND (is_enabled = 1 OR webhook_id = CAST(?2 AS INTEGER))
       ORDER BY webhook_id`,
    )
    .bind(appId, webhookId)
    .all<Subscriber & { is_enabled: number; url: string }>();
  return {
    subscribers: results.filter((r) => r.is_enabled === 1),
    url: results.find((r) => r.webhook_id === webhookId)?.url ?? null,
  };
}
