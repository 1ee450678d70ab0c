// Who receives published events: the enabled webhooks of the publishing applications, with the
// event types each takes and its content filter, as D1 holds them now, and each application's
// newest webhook change (its audit record's id), which says how recent the read is. One round trip.
import type { Db } from '../../platform/d1';

/** An enabled webhook that events may be delivered to. */
export interface Subscriber {
  webhook_id: string;
  app_id: string;
  /** JSON text of the event types it receives; null: every type. */
  event_types: string | null;
  /** JSON text of its content filter; null: none. */
  filter: string | null;
  /** Its URL as stored (a destination's address beyond HTTP), whose host a host's rate counts by (hostOf). */
  url: string;
}

/** The subscribers of some applications, and how recent the read is. */
export interface SubscribersRead {
  subscribers: Subscriber[];
  /**
   * Each application's newest webhook change when read: the largest audit record id of its
   * webhooks (0: none). Audit ids only grow, so a read that saw a change has at least its id.
   */
  seen: Record<string, number>;
}

/** The enabled webhooks of these applications, by id, and each application's newest change. */
export async function readSubscribers(db: Db, appIds: string[]): Promise<SubscribersRead> {
  const apps = JSON.stringify(appIds);
  const [webhooks, changes] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, event_types, filter, url FROM webhooks
         WHERE app_id IN (SELECT value FROM json_each(?1)) AND is_enabled = 1
         ORDER BY webhook_id`,
      )
      .bind(apps),
    // One index lookup per application (webhook_audit_by_app).
    db
      .prepare(
        `SELECT value AS app_id,
           (SELECT MAX(audit_id) FROM webhook_audit WHERE app_id = json_each.value) AS seen
         FROM json_each(?1)`,
      )
      .bind(apps),
  ]);
  const seen: Record<string, number> = {};
  for (const row of changes?.results ?? []) seen[row.app_id as string] = Number(row.seen ?? 0);
  return { subscribers: (webhooks?.results ?? []) as unknown as Subscriber[], seen };
}

/**
 * The application's enabled webhooks (as readSubscribers gives them), and the URL (and
 * destination) of its webhook `webhookId`, enabled or not (null: it has none such): who hears of an operational event about
 * that webhook, and where it is. One round trip.
 */
export async function readSubscribersAbout(
  db: Db,
  appId: string,
  webhookId: string,
): Promise<{ subscribers: Subscriber[]; url: string | null; destination: string | null }> {
  const { results } = await db
    .prepare(
      `SELECT CAST(webhook_id AS TEXT) AS webhook_id, app_id, event_types, filter, url, is_enabled, destination
       FROM webhooks
       WHERE app_id = ?1 AND (is_enabled = 1 OR webhook_id = CAST(?2 AS INTEGER))
       ORDER BY webhook_id`,
    )
    .bind(appId, webhookId)
    .all<Subscriber & { is_enabled: number; destination: string | null }>();
  const about = results.find((r) => r.webhook_id === webhookId);
  return {
    subscribers: results.filter((r) => r.is_enabled === 1),
    url: about?.url ?? null,
    destination: about?.destination ?? null,
  };
}
