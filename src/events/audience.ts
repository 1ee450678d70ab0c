// Who receives each event of a publish, from a read of its applications' subscribers: the webhooks
// whose event types take its type, and the filters of those that have one (the application's
// object narrows the targets by them when it stores the events).
import { groupBy } from '../core/batches';
import { hostOf } from '../core/destinations';
import { log } from '../core/log';
import { retryD1 } from '../platform/d1';
import { readSubscribers, type Subscriber } from '../webhooks/store/subscribers';
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

/**
 * The subscribers that share their host with another of their application's (by scheme, host and
 * port: hostOf, as the passes ask for a host's slots; a destination's is its API's), by
 * application: only these need the host's rate summed in the application's object; any other is
 * alone at its host, and its own rate is the host's (see Hosts.tell).
 */
export function sharedOf(subscribers: Subscriber[]): Record<string, string[]> {
  const keys = subscribers.map((s) => `${s.app_id} ${hostOf(s.url)}`);
  const count = new Map<string, number>();
  for (const key of keys) count.set(key, (count.get(key) ?? 0) + 1);
  const shared: Record<string, string[]> = {};
  subscribers.forEach((s, i) => {
    shared[s.app_id] ??= [];
    if ((count.get(keys[i] as string) ?? 0) > 1) shared[s.app_id]?.push(s.webhook_id);
  });
  return shared;
}

/** Whom a publish delivers to: each event's targets, their filters, and which of them share a host (when read). */
export interface Audience {
  targets: string[][];
  filters: Filters;
  /** The application's enabled webhooks that share their host with another (see sharedOf); absent: not known. */
  shared?: string[];
}

/** Reads of the subscribers one publish makes at most when changes keep arriving during them. */
const REREADS = 3;

/**
 * A publish's targets and filters as they stand, in its application's object: `given`, read when
 * the application's newest webhook change was `seen`, unless the object was told of a later one
 * (`changed`: a change whose operation has answered, as it tells the object before answering),
 * then read again from D1. So a webhook change that has answered applies to every event stored
 * after it; a publish that read after the change (nearly all) costs nothing more.
 */
export async function subscribersNow(
  env: CloudflareBindings,
  events: EventToStore[],
  given: Audience,
  seen: number,
  changed: number,
): Promise<Audience> {
  let now = given;
  const appId = events[0]?.appId;
  for (let read = 0; appId !== undefined && seen < changed && read < REREADS; read++) {
    const fresh = await retryD1(() => readSubscribers(env.DB, [appId]));
    now = {
      targets: targetsOf(events, fresh.subscribers),
      filters: filtersOf(fresh.subscribers),
      shared: sharedOf(fresh.subscribers)[appId] ?? [],
    };
    seen = fresh.seen[appId] ?? 0;
    log('info', { msg: 'subscribers read again: a webhook changed after the publish read them', app_id: appId });
  }
  return now;
}
