// The filter evaluator: a pure function of a checked filter, an event object and the webhook's
// value set (a lookup the caller provides), and the why of a mismatch, a second pass run only when
// asked. The rules are in docs/filters.md. What filters read of an event is worked out once per
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

/** Why an event does not match a filter: the first condition, in the filter's order, that does not hold. */
export interface Why {
  /** The condition's path as written (`data.items.0.id`); for `$not`, its filter's first path (null: it has none). */
  readonly path: string | null;
  /** The operator that does not hold (`$lt`): `$eq` for a bare scalar, `$not` for a `$not`. */
  readonly operator: string;
  /** The filter's operand, as JSON text (a `$not`'s: its filter). */
  readonly expected: string;
  /** The event's value at the path, as JSON text; absent when the path is missing. */
  readonly found?: string;
}

/** What the why reads beside the compiled filter: the filter and the event as written (numbers as sent). */
interface Written {
  readonly values: EventValues;
  readonly event: unknown;
  readonly inSet: InSet;
}

/**
 * Why `event` does not match `filter`, or null when it matches: the first key, in document order,
 * that does not hold (inside `$and` the first of its filters that does not match, inside `$or` the
 * why of its last filter), and in a path's condition its first operator that does not hold.
 * `writtenFilter` and `writtenEvent` are the filter and the event parsed again with every number
 * kept as its text (JSON.rawJSON), so operands and values are shown as they were sent; the
 * matching itself reads `event`. A second pass: publishing never asks for it.
 */
export function whyNot(
  filter: Filter,
  writtenFilter: unknown,
  event: EventValues,
  writtenEvent: unknown,
  inSet: InSet,
): Why | null {
  return whyOf(filter, writtenFilter as Record<string, unknown>, { values: event, event: writtenEvent, inSet });
}

function whyOf(filter: Filter, written: Record<string, unknown>, on: Written): Why | null {
  // The clauses follow the written filter's keys, in order (parseFilter).
  const keys = Object.keys(written);
  for (const [i, clause] of filter.clauses.entries()) {
    const why = whyClause(clause, written[keys[i] as string], on);
    if (why !== null) return why;
  }
  return null;
}

function whyClause(clause: Clause, operand: unknown, on: Written): Why | null {
  switch (clause.kind) {
    case 'and': {
      const items = operand as Record<string, unknown>[];
      for (const [i, filter] of clause.filters.entries()) {
        const why = whyOf(filter, items[i] as Record<string, unknown>, on);
        if (why !== null) return why;
      }
      return null;
    }
    case 'or': {
      if (holds(clause, on.values, on.inSet)) return null;
      const last = clause.filters.length - 1;
      return whyOf(
        clause.filters[last] as Filter,
        (operand as Record<string, unknown>[])[last] as Record<string, unknown>,
        on,
      );
    }
    case 'not': {
      if (holds(clause, on.values, on.inSet)) return null;
      const first = firstPath(clause.filter);
      return {
        path: first === null ? null : first.key,
        operator: '$not',
        expected: JSON.stringify(operand),
        ...(first === null ? {} : found(first, on)),
      };
    }
    case 'path': {
      const at = on.values.at(clause);
      const failed = clause.tests.find((test) => !passes(test, at, on.inSet));
      if (failed === undefined) return null;
      const operator = `$${failed.op}`;
      // A bare scalar is its own operand (its one test is $eq); an object of operators has it at its key.
      const bare = typeof operand !== 'object' || operand === null || !Object.hasOwn(operand, operator);
      const expected = bare ? operand : (operand as Record<string, unknown>)[operator];
      return { path: clause.key, operator, expected: JSON.stringify(expected), ...found(clause, on) };
    }
  }
}

/** The first path of a filter, depth first in document order; null when it names none (`{}`). */
function firstPath(filter: Filter): PathClause | null {
  for (const clause of filter.clauses) {
    if (clause.kind === 'path') return clause;
    const inner = clause.kind === 'not' ? [clause.filter] : clause.filters;
    for (const f of inner) {
      const first = firstPath(f);
      if (first !== null) return first;
    }
  }
  return null;
}

/** `found`: the written event's value at the clause's path, when the path is there. */
function found(clause: PathClause, on: Written): { found?: string } {
  if (on.values.at(clause).value === undefined) return {};
  return { found: JSON.stringify(valueAt(on.event, clause.path)) };
}
