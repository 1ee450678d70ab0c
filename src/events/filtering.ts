// Content filters at publish, in the application's object: of the webhooks an event's type goes
// to, those whose filter matches its event object. The filters come with the publish (read from
// D1 with the subscribers, in the same round trip); the value sets their `$in_set` looks up are
// this object's own, so matching adds no network hop, and it runs in the transaction that stores
// the events: a set change that has answered applies to every event stored after it.
import { EventValues, type FilterEvent, type InSet, matches, type Why, whyNot } from '../core/filter/match';
import { type Filter, parseFilter } from '../core/filter/parse';
import { log } from '../core/log';
import { parseJsonText } from '../http/body';
import type { EventToStore } from './store/events';
import { hasValue } from './store/values';

/** The filters of a publish's webhooks that have one: webhook id -> the filter's JSON text. */
export type Filters = Record<string, string>;

/** The event object a filter reads, from an event to store: its type and its payload's `data`. */
export function eventObject(event: EventToStore): FilterEvent {
  const { data } = JSON.parse(event.payload) as { data: unknown };
  return { type: event.type, data };
}

/**
 * The webhook's value set as this object holds it, for one event: each value looked up once, however
 * many `$in_set` tests of the webhook's filter ask about it.
 */
export function valueSetOf(sql: SqlStorage, webhookId: string): InSet {
  const known = new Map<string, boolean>();
  return (value) => {
    let held = known.get(value);
    if (held === undefined) {
      held = hasValue(sql, webhookId, value);
      known.set(value, held);
    }
    return held;
  };
}

/**
 * A filter (JSON text as stored: checked, numbers as sent) tried against an event (JSON text of
 * `{"type", "data"}`, numbers as sent) with a value set, as at publish: null when it matches, else
 * why it does not.
 */
export function tryEvent(filterText: string, eventText: string, inSet: InSet): Why | null {
  const event = new EventValues(JSON.parse(eventText) as FilterEvent);
  const filter = parseFilter(JSON.parse(filterText));
  return whyNot(filter, parseJsonText(filterText, true), event, parseJsonText(eventText, true), inSet);
}

/** Filters compiled, by their JSON text: a compiled filter is immutable, so publishes share it. */
const cache = new Map<string, Filter | null>();
const CACHE_MAX = 1000;

/** A stored filter compiled; null when it no longer reads (never expected: it was checked when stored). */
function compiled(webhookId: string, text: string): Filter | null {
  const known = cache.get(text);
  if (known !== undefined) return known;
  let filter: Filter | null;
  try {
    filter = parseFilter(JSON.parse(text));
  } catch (err) {
    log('error', { msg: 'a stored filter does not read; delivering as without it', webhook_id: webhookId }, err);
    filter = null;
  }
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(text, filter);
  return filter;
}

/**
 * `targets[i]` (the webhooks of `events[i]` by event types) narrowed to those whose filter matches
 * the event; a webhook without a filter keeps every event. Each filter is compiled once (and kept
 * for the next publishes), each event's data parsed at most once, and only when one of its
 * webhooks has a filter; every filter of the event reads its values through one EventValues, so a
 * value at a path is read once per event (a digit string of 65,000 characters once, not once per
 * test of every webhook).
 */
export function filterTargets(
  sql: SqlStorage,
  events: EventToStore[],
  targets: string[][],
  filters: Filters,
): string[][] {
  const ids = Object.keys(filters);
  if (ids.length === 0) return targets;
  const byWebhook = new Map(ids.map((id) => [id, compiled(id, filters[id] as string)]));
  return events.map((event, i) => {
    let values: EventValues | undefined;
    return (targets[i] ?? []).filter((webhookId) => {
      const filter = byWebhook.get(webhookId);
      if (filter === undefined || filter === null) return true;
      values ??= new EventValues(eventObject(event));
      return matches(filter, values, valueSetOf(sql, webhookId));
    });
  });
}
