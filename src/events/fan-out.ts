// Publishing, seen from the Worker: one D1 read (which webhooks receive each event, by their types
// as D1 holds them now; and which events the release before stored in D1 under the same source
// key, while the move to the objects is not over), then one call per application to its object,
// which publishes them: stores the events and their deliveries, and hands them to the endpoints. Applications' objects are called side by side;
// each stores its events or none.
import { groupBy } from '../core/batches';
import type { Db } from '../platform/d1';
import { inObject } from '../platform/objects';
import { type Subscriber, subscribersStatement } from '../webhooks/store/subscribers';
import type { EventToStore, StoredEvent } from './store/events';

/** What publishing reads in D1. */
export interface FanOut {
  subscribers: Subscriber[];
  /** Events of the release before, by application and source key (JSON of the pair). */
  earlier: Map<string, string>;
}

const sourceOf = (appId: string, sourceKey: string) => JSON.stringify([appId, sourceKey]);

/** The webhooks that may receive these events, and their source keys' events still in D1. One round trip. */
export async function readFanOut(db: Db, events: EventToStore[]): Promise<FanOut> {
  const apps = [...new Set(events.map((e) => e.appId))];
  const keys = events.flatMap((e) => (e.sourceKey === null ? [] : [[e.appId, e.sourceKey]]));
  const [subscribers, earlier] = await db.batch<Record<string, string>>([
    subscribersStatement(db, apps),
    db
      .prepare(
        `SELECT app_id, source_key, event_id FROM events
         WHERE (app_id, source_key) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1))`,
      )
      .bind(JSON.stringify(keys)),
  ]);
  return {
    subscribers: (subscribers?.results ?? []) as unknown as Subscriber[],
    earlier: new Map(
      (earlier?.results ?? []).map((r) => [sourceOf(r.app_id as string, r.source_key as string), r.event_id as string]),
    ),
  };
}

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

/**
 * Publishes events as `fanOut` says: an event its application published under the release
 * before answers that event's id; the others go to their applications' objects.
 */
export async function publishToSubscribers(
  env: CloudflareBindings,
  events: EventToStore[],
  fanOut: FanOut,
): Promise<StoredEvent[]> {
  const results: StoredEvent[] = new Array(events.length);
  const fresh: number[] = [];
  events.forEach((e, i) => {
    const earlier = e.sourceKey === null ? undefined : fanOut.earlier.get(sourceOf(e.appId, e.sourceKey));
    if (earlier === undefined) fresh.push(i);
    else results[i] = { eventId: earlier, deliveryIds: [] };
  });
  const toStore = fresh.map((i) => events[i] as EventToStore);
  const stored = await publishAtApplications(env, toStore, targetsOf(toStore, fanOut.subscribers));
  fresh.forEach((i, k) => {
    results[i] = stored[k] as StoredEvent;
  });
  return results;
}

/**
 * Publishes events at their applications' objects, `targets[i]` the webhooks of `events[i]`; the
 * results in the order of `events`. A failing object is a retryable StorageFailure (its
 * application's events are not stored; other applications' may be: sending again is safe).
 */
export async function publishAtApplications(
  env: CloudflareBindings,
  events: EventToStore[],
  targets: string[][],
): Promise<StoredEvent[]> {
  const results: StoredEvent[] = new Array(events.length);
  const byApp = groupBy(
    events.map((_, i) => i),
    (i) => (events[i] as EventToStore).appId,
  );
  await Promise.all(
    [...byApp].map(async ([appId, mine]) => {
      const stored = await inObject(() =>
        env.APPLICATIONS.getByName(appId).publish(
          mine.map((i) => events[i] as EventToStore),
          mine.map((i) => targets[i] ?? []),
        ),
      );
      mine.forEach((at, k) => {
        results[at] = stored[k] as StoredEvent;
      });
    }),
  );
  return results;
}
