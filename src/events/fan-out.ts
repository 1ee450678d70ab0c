// Publishing, seen from the Worker: which webhooks receive each event (by their types, as D1 held
// them when read), then one call per application to its object, with the filters of its webhooks
// that have one, which publishes them: keeps the webhooks whose filter matches, stores the events
// and their deliveries, and hands them to the endpoints. Applications' objects are called side by
// side; each stores its events or none.
import { groupBy } from '../core/batches';
import { inObject } from '../platform/objects';
import type { SubscribersRead } from '../webhooks/store/subscribers';
import { filtersOf, sharedOf, targetsOf } from './audience';
import type { Filters } from './filtering';
import type { EventToStore, StoredEvent } from './store/events';

/** The applications that publish `events`, each once: whose subscribers to read. */
export const publishersOf = (events: EventToStore[]) => [...new Set(events.map((e) => e.appId))];

/**
 * Publishes events to the subscribers `read` found that take their types and whose filters match
 * them; the results in the order of `events`. Each application's object is given how recent the
 * read is (`seen`): one told of a webhook change after it reads its subscribers again.
 */
export const publishToSubscribers = (env: CloudflareBindings, events: EventToStore[], read: SubscribersRead) =>
  publishAtApplications(
    env,
    events,
    targetsOf(events, read.subscribers),
    filtersOf(read.subscribers),
    read.seen,
    sharedOf(read.subscribers),
  );

/**
 * Publishes events at their applications' objects, `targets[i]` the webhooks of `events[i]`, each
 * kept only where its filter in `filters` matches (test events and resends give none: they ignore
 * filters); the results in the order of `events`. `shared`: each application's webhooks that share
 * their host with another, when the subscribers were read (see sharedOf). A failing object is a retryable StorageFailure
 * (its application's events are not stored; other applications' may be: sending again is safe).
 */
export async function publishAtApplications(
  env: CloudflareBindings,
  events: EventToStore[],
  targets: string[][],
  filters: Filters = {},
  seen?: Record<string, number>,
  shared?: Record<string, string[]>,
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
          seen?.[appId],
          shared === undefined ? undefined : (shared[appId] ?? []),
        ),
      );
      mine.forEach((at, k) => {
        results[at] = stored[k] as StoredEvent;
      });
    }),
  );
  return results;
}
