// A webhook's content filter as sent (a JSON object) checked against the grammar and compiled into
// the form `matches` evaluates. The grammar, its limits and every choice made here are in
// docs/filters.md; the text a refusal carries names the key it is about, by its path in the filter.
import { InvalidInput } from '../errors';
import { isScalar, normaliseScalar, type Ordered, rangeValue, type Scalar, scalarKey } from './values';

/** The most bytes a filter's JSON (UTF-8) may take. */
export const FILTER_MAX_BYTES = 8192;
/** The most filters nested in one another through `$and`, `$or` and `$not` (the filter itself is 1). */
export const FILTER_MAX_DEPTH = 10;
/** The most keys of one filter object, and the most filters in one `$and` or `$or`. */
export const FILTER_MAX_KEYS = 64;
/** The most scalars of one `$in` or `$nin`. */
export const FILTER_MAX_IN = 1000;
/** The most segments of one path (`data.items.0.id` has four). */
export const PATH_MAX_SEGMENTS = 16;

/** One condition on the value at a path. Strings are held as `normaliseScalar` makes them. */
export type Test =
  | { readonly op: 'eq' | 'ne'; readonly value: Scalar }
  | { readonly op: 'in' | 'nin'; readonly keys: ReadonlySet<string> }
  | { readonly op: 'gt' | 'gte' | 'lt' | 'lte'; readonly bound: Ordered }
  | { readonly op: 'exists'; readonly present: boolean }
  | { readonly op: 'prefix'; readonly prefix: string; readonly lowerPrefix: string }
  | { readonly op: 'in_set' };

/** A path's clause: its key as written (`data.price`), its segments, its tests. */
export interface PathClause {
  readonly kind: 'path';
  readonly key: string;
  readonly path: readonly string[];
  readonly tests: readonly Test[];
}

/** One key of a filter object. */
export type Clause =
  | { readonly kind: 'and' | 'or'; readonly filters: readonly Filter[] }
  | { readonly kind: 'not'; readonly filter: Filter }
  | PathClause;

/**
 * A checked filter: it matches an event when every one of its clauses holds. Its clauses follow
 * the keys of the filter object as sent, in order, and a path's tests the keys of its condition
 * (one test for a bare scalar): what a mismatch's why reads its operands from.
 */
export interface Filter {
  readonly clauses: readonly Clause[];
}

/**
 * A filter that does not follow the grammar. `path` names the offending key from the filter's
 * own name (`filter.$or.1.data.price.$gte`), `reason` says what is wrong; the message is
 * `path: reason`, printable ASCII only, fit for an X-Error-Detail header. Input a rule refuses, so
 * a request that sent it is answered 400 with it as its detail.
 */
export class InvalidFilter extends InvalidInput {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
    this.name = 'InvalidFilter';
  }
}

const SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;
const SHOWN_KEY = /^[!-~]{1,64}$/;
const RANGE_OPS = { $gt: 'gt', $gte: 'gte', $lt: 'lt', $lte: 'lte' } as const;
const OPERATORS = '$eq, $ne, $in, $nin, $gt, $gte, $lt, $lte, $exists, $prefix, $in_set';

/**
 * A key as a refusal names it: as it is when it is at most 64 visible ASCII characters, otherwise
 * as a JSON string with everything outside printable ASCII escaped, cut at 64 characters.
 */
function shown(key: string): string {
  if (SHOWN_KEY.test(key)) return key;
  const cut = key.length > 64 ? `${key.slice(0, 64)}...` : key;
  return JSON.stringify(cut).replace(/[^ -~]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  [Object.prototype, null].includes(Object.getPrototypeOf(value));

/**
 * Checks a filter as sent (`name` is what refusals call it: `filter`) and compiles it for
 * `matches`. Throws InvalidFilter naming the first offending key.
 */
export function parseFilter(value: unknown, name = 'filter'): Filter {
  if (!isObject(value)) throw new InvalidFilter(name, 'must be a JSON object');
  let bytes: number;
  try {
    bytes = new TextEncoder().encode(JSON.stringify(value)).byteLength;
  } catch {
    throw new InvalidFilter(name, 'must be a JSON object');
  }
  if (bytes > FILTER_MAX_BYTES) throw new InvalidFilter(name, `must be at most ${FILTER_MAX_BYTES} bytes of JSON`);
  return filterAt(value, name, 1);
}

function filterAt(value: unknown, at: string, depth: number): Filter {
  if (!isObject(value)) throw new InvalidFilter(at, 'must be a JSON object (a filter)');
  if (depth > FILTER_MAX_DEPTH) throw new InvalidFilter(at, `filters nest at most ${FILTER_MAX_DEPTH} deep`);
  const keys = Object.keys(value);
  if (keys.length > FILTER_MAX_KEYS) throw new InvalidFilter(at, `must have at most ${FILTER_MAX_KEYS} keys`);
  return { clauses: keys.map((key) => clauseAt(key, value[key], `${at}.${shown(key)}`, depth)) };
}

function clauseAt(key: string, value: unknown, at: string, depth: number): Clause {
  if (key === '$and' || key === '$or') {
    if (!Array.isArray(value) || value.length === 0 || value.length > FILTER_MAX_KEYS) {
      throw new InvalidFilter(at, `must be an array of 1 to ${FILTER_MAX_KEYS} filters`);
    }
    const filters = value.map((item, i) => filterAt(item, `${at}.${i}`, depth + 1));
    return { kind: key === '$and' ? 'and' : 'or', filters };
  }
  if (key === '$not') return { kind: 'not', filter: filterAt(value, at, depth + 1) };
  if (key.startsWith('$')) throw new InvalidFilter(at, 'is not $and, $or, $not or a dotted path');
  return { kind: 'path', key, path: pathOf(key, at), tests: conditionAt(value, at) };
}

/** A key's path: `type`, or `data` and up to 15 more segments of letters, digits, _ and -. */
function pathOf(key: string, at: string): string[] {
  const segments = key.split('.');
  if (segments.length > PATH_MAX_SEGMENTS) {
    throw new InvalidFilter(at, `a path has at most ${PATH_MAX_SEGMENTS} segments`);
  }
  if (!segments.every((segment) => SEGMENT.test(segment))) {
    throw new InvalidFilter(at, 'a path is segments of 1 to 64 letters, digits, _ or - joined by dots');
  }
  if (segments[0] !== 'data' && segments[0] !== 'type') {
    throw new InvalidFilter(at, 'a path starts at the event object: data or type');
  }
  if (segments[0] === 'type' && segments.length > 1) {
    throw new InvalidFilter(at, 'type is a string: a path cannot go into it');
  }
  return segments;
}

/** A path's condition: a scalar (equality) or a non-empty object of operators, all of which must hold. */
function conditionAt(value: unknown, at: string): Test[] {
  if (isScalar(value)) return [{ op: 'eq', value: normaliseScalar(value) }];
  if (!isObject(value)) throw new InvalidFilter(at, 'must be a JSON scalar or an object of operators');
  const ops = Object.keys(value);
  if (ops.length === 0) throw new InvalidFilter(at, 'an object of operators must name at least one');
  return ops.map((op) => testOf(op, value[op], `${at}.${shown(op)}`));
}

function testOf(op: string, value: unknown, at: string): Test {
  switch (op) {
    case '$eq':
    case '$ne':
      if (!isScalar(value)) throw new InvalidFilter(at, 'must be a JSON scalar');
      return { op: op === '$eq' ? 'eq' : 'ne', value: normaliseScalar(value) };
    case '$in':
    case '$nin':
      return { op: op === '$in' ? 'in' : 'nin', keys: scalarKeys(value, at) };
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      const bound = rangeValue(value);
      if (bound === null) throw new InvalidFilter(at, 'must be a number or a string of decimal digits');
      return { op: RANGE_OPS[op], bound };
    }
    case '$exists':
      if (typeof value !== 'boolean') throw new InvalidFilter(at, 'must be true or false');
      return { op: 'exists', present: value };
    case '$prefix':
      if (typeof value !== 'string' || value.length === 0) throw new InvalidFilter(at, 'must be a non-empty string');
      return { op: 'prefix', prefix: value, lowerPrefix: value.toLowerCase() };
    case '$in_set':
      if (value !== true) throw new InvalidFilter(at, 'must be true');
      return { op: 'in_set' };
    default:
      throw new InvalidFilter(
        at,
        op.startsWith('$')
          ? `is not an operator (${OPERATORS})`
          : 'is not an operator: name a nested field with a dotted path (data.a.b)',
      );
  }
}

function scalarKeys(value: unknown, at: string): Set<string> {
  if (!Array.isArray(value) || value.length === 0 || value.length > FILTER_MAX_IN) {
    throw new InvalidFilter(at, `must be an array of 1 to ${FILTER_MAX_IN} JSON scalars`);
  }
  return new Set(
    value.map((item, i) => {
      if (!isScalar(item)) throw new InvalidFilter(`${at}.${i}`, 'must be a JSON scalar');
      return scalarKey(item);
    }),
  );
}
