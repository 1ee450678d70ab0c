// Who receives each event of a publish, from a read of its applications' subscribers: the webhooks
// whose event types take its type, and the filters of those that have one (the application's
// object narrows the targets by them when it stores the events).
import { groupBy } from '../core/batches';
import type { Subscriber } from '../webhooks/store/subscribers';
import type { Filters } from './filtering';
import type { EventToStore } from './store/events';

/** For each event, the webhooks it is delivered to: its application's whose types include its type (null: all). */
export function targetsOf(events: EventToStore[], subscribers: Subscriber[]): string[][] {
  // Each webhook's types parsed once, whatever the number of events.
  const byApp = groupBy(
    subscribers.map((s) => ({
      appId: s.app_id,
      webhookId: s.webhook_id,
      types: s.event_types === null ? null : new Set(JSON.parse(s.event_types) as string[]),
    })),
    (w) => w.appId,
  );
  return events.map((event) =>
    (byApp.get(event.appId) ?? []).filter((w) => w.types === null || w.types.has(event.type)).map((w) => w.webhookId),
  );
}

/** The filters of the subscribers that have one, by webhook id. */
export function filtersOf(subscribers: Subscriber[]): Filters {
  const filters: Filters = {};
  for (const s of subscribers) if (s.filter !== null) filters[s.webhook_id] = s.filter;
  return filters;
}
