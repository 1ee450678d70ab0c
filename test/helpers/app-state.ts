// What an application has stored, as its objects hold it: its events (those with a source key in
// its Application object, the others known by their deliveries) and the deliveries of them (in the Endpoint objects of its webhooks, as D1 lists them).
import { webhooksOf } from './database';
import { applicationSql, endpointSql } from './objects';

export interface AppEvent {
  event_id: string;
  source_key: string | null;
  created_at: string;
}

export interface AppDelivery {
  delivery_id: string;
  event_id: string;
  message_id: string;
  webhook_id: string;
  type: string;
  payload: string;
  status: string;
  created_at: string;
}

/** The application's events (oldest first) and its deliveries at every webhook it has (by id). */
export async function appState(appId: string): Promise<{ events: AppEvent[]; deliveries: AppDelivery[] }> {
  // Events kept by source key (and those of the release before), then the unkeyed ones, which only
  // their deliveries record.
  const keyed = await applicationSql<AppEvent>(
    appId,
    `SELECT event_id, CASE WHEN source_key LIKE 'evt:%' THEN NULL ELSE source_key END AS source_key, created_at
     FROM dedupe UNION ALL SELECT event_id, source_key, created_at FROM events`,
  );
  const deliveries: AppDelivery[] = [];
  for (const hook of await webhooksOf(appId)) {
    const rows = await endpointSql<Omit<AppDelivery, 'webhook_id'>>(
      hook.webhook_id,
      `SELECT CAST(delivery_id AS TEXT) AS delivery_id, event_id, message_id, type, payload, status, created_at
       FROM deliveries ORDER BY delivery_id`,
    );
    deliveries.push(...rows.map((r) => ({ ...r, webhook_id: hook.webhook_id })));
  }
  const events = [...keyed];
  for (const d of deliveries) {
    if (!events.some((e) => e.event_id === d.event_id)) {
      events.push({ event_id: d.event_id, source_key: null, created_at: d.created_at });
    }
  }
  events.sort((a, b) => a.created_at.localeCompare(b.created_at));
  return { events, deliveries };
}

/** How many events and deliveries the application has stored. */
export async function appCounts(appId: string): Promise<{ events: number; deliveries: number }> {
  const { events, deliveries } = await appState(appId);
  return { events: events.length, deliveries: deliveries.length };
}
