// Publishing, seen from the Worker: which webhooks receive each event (by their types, as D1 held
// them when read), then one call per application to its object, with the filters of its webhooks
// that have one, which publishes them: keeps the webhooks whose filter matches, stores the events
// and their deliveries, and hands them to the endpoints. Applications' objects are called side by
// side; each stores its events or none.
import { groupBy } from '../core/batches';
import { inObject } from '../platform/objects';
import type { Subscriber } from '../webhooks/store/subscribers';
import type { Filters } from './filtering';
import type { EventToStore, StoredEvent } from './store/events';

/** The applications that publish `events`, each once: whose subscribers to read. */
export const publishersOf = (events: EventToStore[]) => [...new Set(events.map((e) => e.appId))];

/** For each event, the webhooks it is delivered to: its application's whose types include its type (null: all). */
function targetsOf(events: EventToStore[], subscribers: Subscriber[]): string[][] {
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

/**
 * Publishes events to the webhooks of `subscribers` that take their types and whose filters match
 * them; the results in the order of `events`.
 */
export const publishToSubscribers = (env: CloudflareBindings, events: EventToStore[], subscribers: Subscriber[]) =>
  publishAtApplications(env, events, targetsOf(events, subscribers), filtersOf(subscribers));

/**
 * Publishes events at their applications' objects, `targets[i]` the webhooks of `events[i]`, each
 * kept only where its filter in `filters` matches (test events and resends give none: they ignore
 * filters); the results in the order of `events`. A failing object is a retryable StorageFailure
 * (its application's events are not stored; other applications' may be: sending again is safe).
 */
export async function publishAtApplications(
  env: CloudflareBindings,
  events: EventToStore[],
  targets: string[][],
  filters: Filters = {},
): Promise<StoredEvent[]> {
  const results: StoredEvent[] = new Array(events.length);
  const byApp = groupBy(
    events.map((_, i) => i),
    (i) => (events[i] as EventToStore).appId,
  );
  await Promise.all(
    [...byApp].map(async ([appId, mine]) => {
      const targetsHere = mine.map((i) => targets[i] ?? []);
      // Only the filters of this application's targets travel to its object.
      const filtersHere: Filters = {};
      for (const id of new Set(targetsHere.flat())) if (filters[id] !== undefined) filtersHere[id] = filters[id];
      const stored = await inObject(() =>
        env.APPLICATIONS.getByName(appId).publish(
          mine.map((i) => events[i] as EventToStore),
          targetsHere,
          filtersHere,
        ),
      );
      mine.forEach((at, k) => {
        results[at] = stored[k] as StoredEvent;
      });
    }),
  );
  return results;
}
