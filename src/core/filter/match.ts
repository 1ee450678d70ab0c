// The filter evaluator: a pure function of a checked filter, an event object and the webhook's
// value set (a lookup the caller provides). The rules are in docs/filters.md.
import type { Clause, Filter, Test } from './parse';
import { isAddress, isScalar, normaliseSetValue, rangeValue, SET_VALUE_MAX_LENGTH, scalarKey } from './values';

/** The event object a filter reads: `type` and `data`, as published. */
export interface FilterEvent {
  type: string;
  data: unknown;
}

/** Whether a value set holds `value` (an address comes lower-cased, as `normaliseSetValue` makes it). */
export type InSet = (value: string) => boolean;

/** Whether `event` matches `filter`: every key of every filter object holds. */
export function matches(filter: Filter, event: FilterEvent, inSet: InSet): boolean {
  return filter.clauses.every((clause) => holds(clause, event, inSet));
}

function holds(clause: Clause, event: FilterEvent, inSet: InSet): boolean {
  switch (clause.kind) {
    case 'and':
      return clause.filters.every((filter) => matches(filter, event, inSet));
    case 'or':
      return clause.filters.some((filter) => matches(filter, event, inSet));
    case 'not':
      return !matches(clause.filter, event, inSet);
    case 'path': {
      const value = valueAt(event, clause.path);
      return clause.tests.every((test) => passes(test, value, inSet));
    }
  }
}

const INDEX = /^(0|[1-9][0-9]*)$/;

/**
 * The value at `path` in `event`, or `undefined` when there is none (JSON has no `undefined`). A
 * segment indexes an array when it is a canonical decimal index; in an object it names an own
 * key (so `0` is the key "0" there, and inherited names such as `constructor` are missing).
 */
function valueAt(event: FilterEvent, path: readonly string[]): unknown {
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

function passes(test: Test, value: unknown, inSet: InSet): boolean {
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
      return isScalar(value) && test.keys.has(scalarKey(value));
    case 'nin':
      return !(isScalar(value) && test.keys.has(scalarKey(value)));
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const n = rangeValue(value);
      if (n === null) return false;
      // A number and a BigInt compare by their exact values.
      if (test.op === 'gt') return n > test.bound;
      if (test.op === 'gte') return n >= test.bound;
      if (test.op === 'lt') return n < test.bound;
      return n <= test.bound;
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
