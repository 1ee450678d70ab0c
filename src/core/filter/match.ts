// The filter evaluator: a pure function of a checked filter, an event object and the webhook's
// value set (a lookup the caller provides). The rules are in docs/filters.md. What filters read of an event is worked out once per
// event and path (EventValues), however many tests of however many filters read it: an event's
// filtering costs what its filters hold, not that times the size of the event's values.
import type { Clause, Filter, PathClause, Test } from './parse';
import {
  compareOrdered,
  isAddress,
  isScalar,
  normaliseSetValue,
  type Ordered,
  rangeValue,
  SET_VALUE_MAX_LENGTH,
  scalarKey,
} from './values';

/** The event object a filter reads: `type` and `data`, as published. */
export interface FilterEvent {
  type: string;
  data: unknown;
}

/** Whether a value set holds `value` (an address comes lower-cased, as `normaliseSetValue` makes it). */
export type InSet = (value: string) => boolean;

/** The value at one path of an event, with what tests make of it, each worked out at most once. */
interface PathValue {
  readonly value: unknown;
  /** How the range operators order it (null: no order); absent until a range test asks. */
  ordered?: Ordered | null;
  /** Its `scalarKey` (null: not a scalar); absent until `$in` or `$nin` asks. */
  key?: string | null;
}

/**
 * An event as filters read it: each path's value looked up once, then its order (a digit string
 * read once, whatever its length) and its key for `$in` once, shared by every test of every filter
 * matched against the event.
 */
export class EventValues {
  private readonly read = new Map<string, PathValue>();

  constructor(readonly event: FilterEvent) {}

  /** The value at the clause's path. */
  at(clause: PathClause): PathValue {
    let known = this.read.get(clause.key);
    if (known === undefined) {
      known = { value: valueAt(this.event, clause.path) };
      this.read.set(clause.key, known);
    }
    return known;
  }
}

function orderOf(at: PathValue): Ordered | null {
  if (at.ordered === undefined) at.ordered = rangeValue(at.value);
  return at.ordered;
}

function keyOf(at: PathValue): string | null {
  if (at.key === undefined) at.key = isScalar(at.value) ? scalarKey(at.value) : null;
  return at.key;
}

/**
 * Whether `event` matches `filter`: every key of every filter object holds. Pass the event's
 * EventValues when several filters (or several passes) read the same event.
 */
export function matches(filter: Filter, event: FilterEvent | EventValues, inSet: InSet): boolean {
  const values = event instanceof EventValues ? event : new EventValues(event);
  return filter.clauses.every((clause) => holds(clause, values, inSet));
}

function holds(clause: Clause, values: EventValues, inSet: InSet): boolean {
  switch (clause.kind) {
    case 'and':
      return clause.filters.every((filter) => matches(filter, values, inSet));
    case 'or':
      return clause.filters.some((filter) => matches(filter, values, inSet));
    case 'not':
      return !matches(clause.filter, values, inSet);
    case 'path': {
      const at = values.at(clause);
      return clause.tests.every((test) => passes(test, at, inSet));
    }
  }
}

const INDEX = /^(0|[1-9][0-9]*)$/;

/**
 * The value at `path` in `event`, or `undefined` when there is none (JSON has no `undefined`). A
 * segment indexes an array when it is a canonical decimal index; in an object it names an own
 * key (so `0` is the key "0" there, and inherited names such as `constructor` are missing).
 */
function valueAt(event: unknown, path: readonly string[]): unknown {
  let at: unknown = event;
  for (const segment of path) {
    if (Array.isArray(at)) {
      if (!INDEX.test(segment)) return undefined;
      at = at[Number(segment)];
    } else if (typeof at === 'object' && at !== null && Object.hasOwn(at, segment)) {
      at = (at as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
  }
  return at;
}

/** Equality with types: strings after `normaliseSetValue` (the condition is normalised already). */
const equals = (value: unknown, condition: unknown) =>
  typeof value === 'string' ? normaliseSetValue(value) === condition : isScalar(value) && value === condition;

function passes(test: Test, at: PathValue, inSet: InSet): boolean {
  const { value } = at;
  if (value === undefined) {
    return test.op === 'ne' || test.op === 'nin' || (test.op === 'exists' && !test.present);
  }
  switch (test.op) {
    case 'exists':
      return test.present;
    case 'eq':
      return equals(value, test.value);
    case 'ne':
      return !equals(value, test.value);
    case 'in':
    case 'nin': {
      const key = keyOf(at);
      return (key !== null && test.keys.has(key)) === (test.op === 'in');
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const ordered = orderOf(at);
      if (ordered === null) return false;
      const order = compareOrdered(ordered, test.bound);
      if (test.op === 'gt') return order > 0;
      if (test.op === 'gte') return order >= 0;
      if (test.op === 'lt') return order < 0;
      return order <= 0;
    }
    case 'prefix':
      if (typeof value !== 'string') return false;
      return isAddress(value) ? value.toLowerCase().startsWith(test.lowerPrefix) : value.startsWith(test.prefix);
    case 'in_set':
      return (
        typeof value === 'string' &&
        value.length > 0 &&
        value.length <= SET_VALUE_MAX_LENGTH &&
        inSet(normaliseSetValue(value))
      );
  }
}
