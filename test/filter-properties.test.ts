// Properties of the filter evaluator over generated filters and events: it agrees with a plain
// reference evaluator written here from the rules in docs/filters.md (deliberately naive: it
// reads the filter as sent, walks paths by hand and compares integers its own way), its why of a
// mismatch agrees with a reference why written from the same rules, range values compare as
// BigInt does, and the parser refuses anything that is not a filter with an InvalidFilter, never
// another error.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventValues, matches, whyNot } from '../src/core/filter/match';
import { InvalidFilter, parseFilter } from '../src/core/filter/parse';
import { compareDigits, compareOrdered, rangeValue } from '../src/core/filter/values';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
interface Event {
  type: string;
  data: Json;
}

// ---- The reference evaluator

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const canon = (v: Json) => (typeof v === 'string' && ADDRESS.test(v) ? v.toLowerCase() : v);
const isScalar = (v: Json) => v === null || typeof v !== 'object';

/** Equality of two JSON values with their types: scalars only, addresses in any case. */
const same = (a: Json, b: Json) => isScalar(a) && isScalar(b) && typeof a === typeof b && canon(a) === canon(b);

/** The value at a dotted path, or `found: false`. */
function lookup(event: Event, key: string): { found: boolean; value: Json } {
  let at: Json = event as unknown as Json;
  for (const segment of key.split('.')) {
    if (Array.isArray(at)) {
      const index = Number(segment);
      if (String(index) !== segment || index >= at.length) return { found: false, value: null };
      at = at[index] as Json;
    } else if (at !== null && typeof at === 'object' && Object.hasOwn(at, segment)) {
      at = at[segment] as Json;
    } else {
      return { found: false, value: null };
    }
  }
  return { found: true, value: at };
}

/** -1, 0 or 1 as a is below, at or above b; null when either has no order. */
function order(a: Json, b: Json): number | null {
  const integer = (v: Json) => (typeof v === 'string' && /^[0-9]+$/.test(v) ? BigInt(v) : null);
  const sign = (d: number | bigint) => (d > 0 ? 1 : d < 0 ? -1 : 0);
  if (typeof a === 'number' && typeof b === 'number') return sign(a - b);
  const x = typeof a === 'number' ? a : integer(a);
  const y = typeof b === 'number' ? b : integer(b);
  if (x === null || y === null) return null;
  if (typeof x === 'bigint' && typeof y === 'bigint') return sign(x - y);
  // One number and one integer: an integral number is a BigInt exactly; a fraction lies strictly
  // between its floor and its floor + 1.
  const [num, big, flip] = typeof x === 'number' ? [x, y as bigint, 1] : [y as number, x, -1];
  const floor = BigInt(Math.floor(num));
  const d = Number.isInteger(num) ? sign(floor - big) : floor >= big ? 1 : -1;
  return d * flip;
}

function refCondition(found: boolean, value: Json, condition: Json, set: string[]): boolean {
  if (isScalar(condition)) return found && same(value, condition);
  return Object.entries(condition as Record<string, Json>).every(([op, operand]) => {
    if (!found) return op === '$ne' || op === '$nin' || (op === '$exists' && operand === false);
    const o = order(value, operand);
    switch (op) {
      case '$eq':
        return same(value, operand);
      case '$ne':
        return !same(value, operand);
      case '$in':
        return (operand as Json[]).some((item) => same(value, item));
      case '$nin':
        return !(operand as Json[]).some((item) => same(value, item));
      case '$gt':
        return o !== null && o > 0;
      case '$gte':
        return o !== null && o >= 0;
      case '$lt':
        return o !== null && o < 0;
      case '$lte':
        return o !== null && o <= 0;
      case '$exists':
        return operand === true;
      case '$prefix':
        if (typeof value !== 'string') return false;
        return ADDRESS.test(value)
          ? value.toLowerCase().startsWith((operand as string).toLowerCase())
          : value.startsWith(operand as string);
      case '$in_set':
        return (
          typeof value === 'string' && value.length >= 1 && value.length <= 256 && set.includes(canon(value) as string)
        );
      default:
        throw new Error(`the generator made ${op}`);
    }
  });
}

function refMatches(filter: Record<string, Json>, event: Event, set: string[]): boolean {
  return Object.entries(filter).every(([key, condition]) => {
    if (key === '$and') return (condition as Record<string, Json>[]).every((f) => refMatches(f, event, set));
    if (key === '$or') return (condition as Record<string, Json>[]).some((f) => refMatches(f, event, set));
    if (key === '$not') return !refMatches(condition as Record<string, Json>, event, set);
    const { found, value } = lookup(event, key);
    return refCondition(found, value, condition, set);
  });
}

/** The reference why: the first key, in order, that does not hold (docs/filters.md, api.md). */
interface RefWhy {
  path: string | null;
  operator: string;
  expected: Json;
  found?: Json;
}

/** The first path of a filter, depth first in the order of its keys. */
function refFirstPath(filter: Record<string, Json>): string | null {
  for (const [key, condition] of Object.entries(filter)) {
    if (key === '$and' || key === '$or') {
      for (const f of condition as Record<string, Json>[]) {
        const first = refFirstPath(f);
        if (first !== null) return first;
      }
    } else if (key === '$not') {
      const first = refFirstPath(condition as Record<string, Json>);
      if (first !== null) return first;
    } else {
      return key;
    }
  }
  return null;
}

function refWhy(filter: Record<string, Json>, event: Event, set: string[]): RefWhy | null {
  const at = (path: string) => {
    const { found, value } = lookup(event, path);
    return found ? { found: value } : {};
  };
  for (const [key, condition] of Object.entries(filter)) {
    if (key === '$and') {
      for (const f of condition as Record<string, Json>[]) {
        const why = refWhy(f, event, set);
        if (why !== null) return why;
      }
    } else if (key === '$or') {
      const branches = condition as Record<string, Json>[];
      if (!branches.some((f) => refMatches(f, event, set))) return refWhy(branches.at(-1) ?? {}, event, set);
    } else if (key === '$not') {
      if (refMatches(condition as Record<string, Json>, event, set)) {
        const path = refFirstPath(condition as Record<string, Json>);
        return { path, operator: '$not', expected: condition, ...(path === null ? {} : at(path)) };
      }
    } else {
      const { found, value } = lookup(event, key);
      const operators: [string, Json][] = isScalar(condition)
        ? [['$eq', condition]]
        : Object.entries(condition as Record<string, Json>);
      for (const [op, operand] of operators) {
        if (!refCondition(found, value, { [op]: operand }, set)) {
          return { path: key, operator: op, expected: operand, ...at(key) };
        }
      }
    }
  }
  return null;
}

// ---- Generators

const ADDRESSES = ['0x5a1f8e1b7c3d9a2e4f60718293a4b5c6d7e8f901', '0x8ba1f109551bd432803012645ac136ddd64dba72'];
/** An address in a random mix of cases (and sometimes with `0X`, which is no address). */
const address = fc
  .tuple(fc.constantFrom(...ADDRESSES), fc.array(fc.boolean(), { minLength: 42, maxLength: 42 }), fc.nat(9))
  .map(([a, upper, x]) => {
    const mixed = [...a].map((ch, i) => (upper[i] ? ch.toUpperCase() : ch)).join('');
    return x === 0 ? mixed : `0x${mixed.slice(2)}`;
  });
// Small pools, so that values and conditions meet often: equal, one apart, either side of 2^64.
const digits = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      '0',
      '007',
      '42',
      '18446744073709551615',
      '18446744073709551616',
      '18446744073709551617',
    ),
    weight: 4,
  },
  { arbitrary: fc.bigInt({ min: 0n, max: 2n ** 80n }).map(String), weight: 1 },
);
const number = fc.oneof(
  { arbitrary: fc.constantFrom(0, -0, 1, 1.5, 42, -7, 999.999, 2 ** 53, 2 ** 64, 1e21), weight: 4 },
  { arbitrary: fc.integer({ min: -50, max: 2000 }), weight: 1 },
  { arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }), weight: 1 },
);
const text = fc.oneof(
  { arbitrary: fc.constantFrom('abc', 'ab', 'ABC', '', '-5', '1.5', '0x10', 'x'.repeat(257)), weight: 3 },
  { arbitrary: fc.string({ maxLength: 3 }), weight: 1 },
);
const scalar: fc.Arbitrary<Json> = fc.oneof(
  { arbitrary: fc.constantFrom(null, true, false), weight: 1 },
  { arbitrary: number, weight: 2 },
  { arbitrary: digits, weight: 2 },
  { arbitrary: address, weight: 2 },
  { arbitrary: text, weight: 1 },
);

const KEYS = ['a', 'b', '0', '1'];
const { value: jsonValue } = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 3, depthIdentifier: 'data' },
    scalar,
    fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 3 }),
    fc.array(tie('value'), { maxLength: 3 }),
  ),
}));
const event: fc.Arbitrary<Event> = fc.record({ type: fc.constantFrom('NEW_NFT', 'MOD_NFT'), data: jsonValue });

const PATHS = [
  'type',
  'data',
  'data.a',
  'data.b',
  'data.0',
  'data.1',
  'data.a.b',
  'data.a.0',
  'data.b.1',
  'data.0.a',
  'data.a.01',
  'data.c',
];
const OPERANDS: Record<string, fc.Arbitrary<Json>> = {
  $eq: scalar,
  $ne: scalar,
  $in: fc.array(scalar, { minLength: 1, maxLength: 4 }),
  $nin: fc.array(scalar, { minLength: 1, maxLength: 4 }),
  $gt: fc.oneof(number, digits),
  $gte: fc.oneof(number, digits),
  $lt: fc.oneof(number, digits),
  $lte: fc.oneof(number, digits),
  $exists: fc.boolean(),
  $prefix: fc.oneof(
    { arbitrary: fc.constantFrom('0x5A', '0x5a1F8e', '0X8B', '0x8ba1f1'), weight: 2 },
    { arbitrary: fc.constantFrom('a', 'ab', 'A', '4', '1'), weight: 1 },
    { arbitrary: fc.string({ minLength: 1, maxLength: 2 }), weight: 1 },
  ),
  $in_set: fc.constant(true),
};
const operators = fc
  .uniqueArray(fc.constantFrom(...Object.keys(OPERANDS)), { minLength: 1, maxLength: 3 })
  .chain((ops) => fc.tuple(...ops.map((op) => (OPERANDS[op] as fc.Arbitrary<Json>).map((v) => [op, v] as const))))
  .map((pairs) => Object.fromEntries(pairs) as Json);
const condition = fc.oneof(scalar, operators);

type RawFilter = Record<string, Json>;
const { filter } = fc.letrec<{ filter: RawFilter; clause: [string, Json] }>((tie) => ({
  filter: fc
    .uniqueArray(tie('clause'), { maxLength: 3, selector: ([key]) => key })
    .map((clauses) => Object.fromEntries(clauses) as RawFilter),
  clause: fc.oneof(
    { maxDepth: 3, depthIdentifier: 'filter' },
    fc.tuple(fc.constantFrom(...PATHS), condition),
    fc.tuple(
      fc.constantFrom('$and', '$or'),
      fc.array(tie('filter'), { minLength: 1, maxLength: 3 }) as fc.Arbitrary<Json>,
    ),
    fc.tuple(fc.constant('$not'), tie('filter') as fc.Arbitrary<Json>),
  ),
}));
/** A value set as the service would store it: each value once, addresses lower-cased. */
const set = fc
  .uniqueArray(fc.oneof(address, text), { maxLength: 6 })
  .map((values) => values.map((v) => canon(v) as string));

// ---- Properties

describe('matches (property)', () => {
  it('agrees with the reference evaluator on generated filters, events and sets', () => {
    const outcomes = { true: 0, false: 0 };
    fc.assert(
      fc.property(filter, fc.array(event, { minLength: 1, maxLength: 5 }), set, (raw, events, values) => {
        const compiled = parseFilter(raw);
        const inSet = (value: string) => values.includes(value);
        for (const e of events) {
          const got = matches(compiled, e, inSet);
          expect(got).toBe(refMatches(raw, e, values));
          outcomes[`${got}`]++;
        }
      }),
      { numRuns: 1000 },
    );
    // Both answers come up often enough for the agreement to mean something.
    expect(outcomes.true).toBeGreaterThan(300);
    expect(outcomes.false).toBeGreaterThan(300);
  });

  it('agrees with the reference on single conditions against values of every kind', () => {
    const path = fc.oneof(
      { arbitrary: fc.constant('data.v'), weight: 4 },
      { arbitrary: fc.constant('data.w'), weight: 1 },
    );
    const value = fc.oneof({ arbitrary: scalar, weight: 4 }, { arbitrary: jsonValue, weight: 1 });
    fc.assert(
      fc.property(path, condition, value, set, (at, cond, v, values) => {
        const raw = { [at]: cond };
        const e = { type: 'NEW_NFT', data: { v } };
        expect(matches(parseFilter(raw), e, (x) => values.includes(x))).toBe(refMatches(raw, e, values));
      }),
      { numRuns: 5000 },
    );
  });

  it('$not of a filter matches exactly the events the filter does not', () => {
    fc.assert(
      fc.property(filter, event, set, (raw, e, values) => {
        const inSet = (value: string) => values.includes(value);
        expect(matches(parseFilter({ $not: raw }), e, inSet)).toBe(!matches(parseFilter(raw), e, inSet));
      }),
    );
  });
});

describe('whyNot (property)', () => {
  it('is null exactly when the filter matches, and otherwise names what the reference why names', () => {
    let explained = 0;
    fc.assert(
      fc.property(filter, fc.array(event, { minLength: 1, maxLength: 5 }), set, (raw, events, values) => {
        const compiled = parseFilter(raw);
        const inSet = (value: string) => values.includes(value);
        for (const e of events) {
          const view = new EventValues(e);
          const why = whyNot(compiled, raw, view, e, inSet);
          expect(why === null).toBe(matches(compiled, view, inSet));
          const ref = refWhy(raw, e, values);
          if (ref === null || why === null) {
            expect(why).toBe(ref);
            continue;
          }
          explained++;
          // Compared as JSON text: how the reply shows them.
          expect(why).toEqual({
            path: ref.path,
            operator: ref.operator,
            expected: JSON.stringify(ref.expected),
            ...(Object.hasOwn(ref, 'found') ? { found: JSON.stringify(ref.found) } : {}),
          });
        }
      }),
      { numRuns: 1000 },
    );
    expect(explained).toBeGreaterThan(300);
  });
});

describe('range values (property)', () => {
  // Digit strings of any length, leading zeros included: up to 200 digits, often of one length.
  const digitString = fc.oneof(
    fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 200 }),
    fc.tuple(fc.nat(3), fc.bigInt({ min: 0n, max: 10n ** 40n })).map(([zeros, n]) => '0'.repeat(zeros) + String(n)),
    fc.string({ unit: fc.constantFrom('0', '9'), minLength: 1, maxLength: 20 }),
  );
  const sign = (n: number | bigint) => (n > 0 ? 1 : n < 0 ? -1 : 0);

  it('digit strings compare by length after leading zeros, then as text: as BigInt compares them', () => {
    fc.assert(
      fc.property(digitString, digitString, (a, b) => {
        const x = rangeValue(a);
        const y = rangeValue(b);
        if (x === null || y === null || x.digits === null || y.digits === null) throw new Error('not ordered');
        expect(x.digits).toBe(BigInt(a).toString());
        expect(sign(compareDigits(x.digits, y.digits))).toBe(sign(BigInt(a) - BigInt(b)));
        expect(sign(compareOrdered(x, y))).toBe(sign(BigInt(a) - BigInt(b)));
      }),
      { numRuns: 5000 },
    );
  });

  it('a number and a digit string compare by their exact values, as the reference order does', () => {
    const number = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer({ min: -5, max: 5000 }),
      fc.constantFrom(0, -0, 0.5, 2 ** 53, 2 ** 53 + 2, 2 ** 64, 1e21, 1.7976931348623157e308),
    );
    const either = fc.oneof(number, digitString) as fc.Arbitrary<Json>;
    fc.assert(
      fc.property(either, either, (a, b) => {
        const x = rangeValue(a);
        const y = rangeValue(b);
        if (x === null || y === null) throw new Error('not ordered');
        expect(sign(compareOrdered(x, y))).toBe((order(a, b) as number) + 0);
      }),
      { numRuns: 5000 },
    );
  });
});

describe('parseFilter (property)', () => {
  it('accepts every generated filter', () => {
    fc.assert(fc.property(filter, (raw) => void parseFilter(raw)));
  });

  it('refuses anything else with an InvalidFilter naming a key of the filter in printable ASCII', () => {
    const key = fc.oneof(fc.constantFrom(...PATHS, ...Object.keys(OPERANDS), '$and', '$or', '$not', '$x'), fc.string());
    const { anything } = fc.letrec<{ anything: unknown }>((tie) => ({
      anything: fc.oneof(
        { maxDepth: 4 },
        fc.jsonValue(),
        fc.dictionary(key, tie('anything'), { maxKeys: 4 }),
        fc.array(tie('anything'), { maxLength: 3 }),
      ),
    }));
    fc.assert(
      fc.property(anything, (value) => {
        try {
          parseFilter(value);
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidFilter);
          expect((err as InvalidFilter).message).toMatch(/^filter[.:][ -~]*$/);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
