// The filter evaluator, operator by operator, then the NFT examples of docs/filters.md, and what
// it reads of an event (once per path, digit strings without BigInt, whatever their length).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EventValues, matches } from '../src/core/filter/match';
import { parseFilter } from '../src/core/filter/parse';
import { normaliseSetValue } from '../src/core/filter/values';
import { hostileFilter } from './helpers/filters';

afterEach(() => {
  vi.restoreAllMocks();
});

const CONTRACT = '0x5a1f8e1b7c3d9a2e4f60718293a4b5c6d7e8f901';
const CONTRACT_MIXED = '0x5A1f8E1b7C3d9A2e4F60718293A4b5C6d7E8f901';
const OTHER = '0x8ba1f109551bd432803012645ac136ddd64dba72';
const DEAD = '0x000000000000000000000000000000000000dEaD';

const noSet = () => false;

/** Whether the event `{type, data}` matches `filter` as sent, with a value set holding `set`. */
const check = (filter: unknown, data: unknown, type = 'NEW_NFT', set: string[] = []) =>
  matches(parseFilter(filter), { type, data }, (value) => set.includes(value));

/** The data of `cases` the condition `condition` on `data.v` matches, by the cases' names. */
function matching(condition: unknown, cases: Record<string, unknown>): string[] {
  const filter = parseFilter({ 'data.v': condition });
  return Object.entries(cases)
    .filter(([, v]) => matches(filter, { type: 'T', data: v === MISSING ? {} : { v } }, noSet))
    .map(([name]) => name);
}

const MISSING = Symbol('missing');
/** One value of every kind, and a missing path. */
const KINDS: Record<string, unknown> = {
  missing: MISSING,
  null: null,
  true: true,
  false: false,
  zero: 0,
  int: 42,
  float: 1.5,
  negative: -7,
  digits: '42',
  bigDigits: '18446744073709551617',
  text: 'abc',
  empty: '',
  address: CONTRACT_MIXED,
  object: { a: 1 },
  array: [42],
};

describe('matches: equality compares JSON values with their types', () => {
  it('a bare scalar and $eq match only the same value of the same type', () => {
    expect(matching(42, KINDS)).toEqual(['int']);
    expect(matching({ $eq: 42 }, KINDS)).toEqual(['int']);
    expect(matching('42', KINDS)).toEqual(['digits']);
    expect(matching(null, KINDS)).toEqual(['null']);
    expect(matching(false, KINDS)).toEqual(['false']);
    expect(matching({ $eq: '' }, KINDS)).toEqual(['empty']);
  });

  it('$ne matches everything else, a missing path, objects and arrays included', () => {
    expect(matching({ $ne: 42 }, KINDS)).toEqual(Object.keys(KINDS).filter((k) => k !== 'int'));
    expect(matching({ $ne: null }, KINDS)).toEqual(Object.keys(KINDS).filter((k) => k !== 'null'));
  });

  it('$in matches any of its scalars, each with its type; $nin the rest', () => {
    expect(matching({ $in: [42, 'abc', null] }, KINDS)).toEqual(['null', 'int', 'text']);
    expect(matching({ $in: ['42', 0] }, KINDS)).toEqual(['zero', 'digits']);
    expect(matching({ $nin: [42, 'abc', null] }, KINDS)).toEqual(
      Object.keys(KINDS).filter((k) => !['null', 'int', 'text'].includes(k)),
    );
  });

  it('objects and arrays are not scalars: no equality condition matches them', () => {
    expect(check({ 'data.v': 42 }, { v: [42] })).toBe(false);
    expect(check({ 'data.v': { $in: [1] } }, { v: { a: 1 } })).toBe(false);
    expect(check({ data: { $ne: 1 } }, { v: 1 })).toBe(true);
  });

  it('numbers equal by value (1.0 is 1, -0 is 0)', () => {
    expect(check({ 'data.v': 1 }, JSON.parse('{"v": 1.0}'))).toBe(true);
    expect(check({ 'data.v': { $in: [0] } }, { v: -0 })).toBe(true);
  });
});

describe('matches: addresses compare without regard to case', () => {
  it('in a bare scalar, $eq, $ne, $in and $nin, whichever side is mixed case', () => {
    expect(check({ 'data.contract': CONTRACT_MIXED }, { contract: CONTRACT })).toBe(true);
    expect(check({ 'data.contract': CONTRACT }, { contract: CONTRACT.toUpperCase().replace('0X', '0x') })).toBe(true);
    expect(check({ 'data.contract': { $eq: CONTRACT_MIXED } }, { contract: CONTRACT })).toBe(true);
    expect(check({ 'data.contract': { $ne: CONTRACT_MIXED } }, { contract: CONTRACT })).toBe(false);
    expect(check({ 'data.to': { $in: [OTHER, DEAD.toLowerCase()] } }, { to: DEAD })).toBe(true);
    expect(check({ 'data.to': { $nin: [DEAD] } }, { to: DEAD.toLowerCase() })).toBe(false);
  });

  it('only addresses: other strings keep their case, and 0X or 41 digits is not an address', () => {
    expect(check({ 'data.v': 'ABC' }, { v: 'abc' })).toBe(false);
    expect(check({ 'data.v': `0X${CONTRACT.slice(2)}` }, { v: `0X${CONTRACT.slice(2).toUpperCase()}` })).toBe(false);
    expect(check({ 'data.v': `${CONTRACT}a` }, { v: `${CONTRACT_MIXED}a` })).toBe(false);
    expect(check({ 'data.v': CONTRACT.slice(0, 41) }, { v: CONTRACT_MIXED.slice(0, 41) })).toBe(false);
  });

  it('$prefix ignores case when the value is an address, and only then', () => {
    expect(check({ 'data.contract': { $prefix: '0x5A1F' } }, { contract: CONTRACT })).toBe(true);
    expect(check({ 'data.contract': { $prefix: '0x5a1f' } }, { contract: CONTRACT_MIXED })).toBe(true);
    expect(check({ 'data.contract': { $prefix: '0x5a1e' } }, { contract: CONTRACT })).toBe(false);
    expect(check({ 'data.member': { $prefix: 'MBR_' } }, { member: 'mbr_7Kq2x9' })).toBe(false);
    expect(check({ 'data.member': { $prefix: 'mbr_' } }, { member: 'mbr_7Kq2x9' })).toBe(true);
  });

  it('normaliseSetValue lower-cases addresses and nothing else', () => {
    expect(normaliseSetValue(CONTRACT_MIXED)).toBe(CONTRACT);
    expect(normaliseSetValue('mbr_7Kq2x9')).toBe('mbr_7Kq2x9');
    expect(normaliseSetValue(`0X${CONTRACT.slice(2).toUpperCase()}`)).toBe(`0X${CONTRACT.slice(2).toUpperCase()}`);
  });
});

describe('matches: the range operators', () => {
  it('each operator on numbers, at and around its bound', () => {
    const values = { below: 9, at: 10, above: 11 };
    expect(matching({ $gt: 10 }, values)).toEqual(['above']);
    expect(matching({ $gte: 10 }, values)).toEqual(['at', 'above']);
    expect(matching({ $lt: 10 }, values)).toEqual(['below']);
    expect(matching({ $lte: 10 }, values)).toEqual(['below', 'at']);
  });

  it('read decimal strings as integers of any size, not as text', () => {
    const wei = {
      small: '999999999999999999',
      floor: '1000000000000000000',
      huge: '340282366920938463463374607431768211456',
    };
    expect(matching({ $gte: '1000000000000000000' }, wei)).toEqual(['floor', 'huge']);
    // As text, '9' > '10'; as integers it is not.
    expect(matching({ $gt: '10' }, { nine: '9', eleven: '11', padded: '0011' })).toEqual(['eleven', 'padded']);
    // Past 2^64, one apart.
    expect(check({ 'data.v': { $gt: '18446744073709551616' } }, { v: '18446744073709551617' })).toBe(true);
    expect(check({ 'data.v': { $gt: '18446744073709551617' } }, { v: '18446744073709551617' })).toBe(false);
  });

  it('compare a number with a digit string by their exact values', () => {
    expect(check({ 'data.v': { $gte: 42 } }, { v: '42' })).toBe(true);
    expect(check({ 'data.v': { $gt: '42' } }, { v: 42 })).toBe(false);
    expect(check({ 'data.v': { $gt: '1' } }, { v: 1.5 })).toBe(true);
    expect(check({ 'data.v': { $lt: 1.5 } }, { v: '1' })).toBe(true);
    expect(check({ 'data.v': { $lt: 1.5 } }, { v: '2' })).toBe(false);
    // 2^64 as a double is exact; the digit string one above it is larger.
    expect(check({ 'data.v': { $gt: 2 ** 64 } }, { v: '18446744073709551617' })).toBe(true);
    expect(check({ 'data.v': { $gte: '18446744073709551617' } }, { v: 2 ** 64 })).toBe(false);
    expect(check({ 'data.v': { $gt: -1 } }, { v: '0' })).toBe(true);
  });

  it('match nothing that is not a number or a digit string', () => {
    expect(matching({ $gte: 0 }, KINDS)).toEqual(['zero', 'int', 'float', 'digits', 'bigDigits']);
    expect(matching({ $lt: '1000' }, { signed: '-5', fraction: '1.5', hex: '0x10', spaced: ' 5', five: '5' })).toEqual([
      'five',
    ]);
  });

  it('all operators of one object must hold (a token id range)', () => {
    const range = { $gte: '1000', $lt: '2000' };
    expect(matching(range, { under: '999', first: '1000', last: '1999', past: '2000' })).toEqual(['first', 'last']);
  });
});

describe('matches: $exists, $prefix, $in_set', () => {
  it('$exists says whether the path is there (null is there)', () => {
    expect(matching({ $exists: true }, KINDS)).toEqual(Object.keys(KINDS).filter((k) => k !== 'missing'));
    expect(matching({ $exists: false }, KINDS)).toEqual(['missing']);
  });

  it('$prefix matches strings only', () => {
    expect(matching({ $prefix: '4' }, KINDS)).toEqual(['digits']);
    expect(matching({ $prefix: 'ab' }, { text: 'abc', exact: 'ab', short: 'a', upper: 'ABC' })).toEqual([
      'text',
      'exact',
    ]);
  });

  it('$in_set asks the set about strings only, addresses lower-cased', () => {
    const asked: string[] = [];
    const filter = parseFilter({ 'data.v': { $in_set: true } });
    const inSet = (value: string) => {
      asked.push(value);
      return value === CONTRACT || value === 'mbr_7Kq2x9';
    };
    const results = [CONTRACT_MIXED, 'mbr_7Kq2x9', 'MBR_7KQ2X9', 42, null, ['mbr_7Kq2x9'], '', 'x'.repeat(257)].map(
      (v) => matches(filter, { type: 'T', data: { v } }, inSet),
    );
    expect(results).toEqual([true, true, false, false, false, false, false, false]);
    // Empty and over-long strings are never in a set (1 to 256 characters): no lookup.
    expect(asked).toEqual([CONTRACT, 'mbr_7Kq2x9', 'MBR_7KQ2X9']);
    expect(matches(filter, { type: 'T', data: {} }, inSet)).toBe(false);
  });
});

describe('matches: paths', () => {
  const data = { items: [{ id: '7' }, { id: '8' }], byIndex: { '0': 'zero' }, nested: { a: { b: null } } };

  it('a number segment indexes an array, and names a key in an object', () => {
    expect(check({ 'data.items.0.id': '7' }, data)).toBe(true);
    expect(check({ 'data.items.1.id': '8' }, data)).toBe(true);
    expect(check({ 'data.items.2.id': { $exists: false } }, data)).toBe(true);
    expect(check({ 'data.byIndex.0': 'zero' }, data)).toBe(true);
  });

  it('an array has no named keys and no padded indexes, and a path does not reach into every element', () => {
    expect(check({ 'data.items.01.id': { $exists: false } }, data)).toBe(true);
    expect(check({ 'data.items.length': { $exists: false } }, data)).toBe(true);
    expect(check({ 'data.items.id': { $exists: false } }, data)).toBe(true);
  });

  it('only own keys: inherited names are missing', () => {
    expect(check({ 'data.constructor': { $exists: false } }, data)).toBe(true);
    expect(check({ 'data.__proto__': { $exists: false } }, data)).toBe(true);
    expect(check({ 'data.nested.toString': { $exists: false } }, data)).toBe(true);
  });

  it('through null and scalars a path is missing; a null at the end is there', () => {
    expect(check({ 'data.nested.a.b': null }, data)).toBe(true);
    expect(check({ 'data.nested.a.b.c': { $exists: false } }, data)).toBe(true);
    expect(check({ 'data.items.0.id.x': { $ne: 1 } }, data)).toBe(true);
  });

  it('type is the event type, and data the whole data', () => {
    expect(check({ type: 'MOD_NFT' }, {}, 'MOD_NFT')).toBe(true);
    expect(check({ type: { $in: ['NEW_NFT', 'MOD_NFT'] } }, {}, 'MEMBER_NFT_ADD')).toBe(false);
    expect(check({ data: { $exists: true } }, null)).toBe(true);
    expect(check({ data: null }, null)).toBe(true);
  });
});

describe('matches: combining filters', () => {
  it('every key of one object must hold; {} matches every event', () => {
    expect(check({ type: 'NEW_NFT', 'data.v': 1 }, { v: 1 })).toBe(true);
    expect(check({ type: 'NEW_NFT', 'data.v': 1 }, { v: 2 })).toBe(false);
    expect(check({}, { v: 2 })).toBe(true);
  });

  it('$and needs all, $or one, $not the opposite', () => {
    const one = { 'data.v': 1 };
    const two = { 'data.w': 2 };
    const events = { both: { v: 1, w: 2 }, first: { v: 1 }, second: { w: 2 }, none: {} };
    const which = (filter: unknown) =>
      Object.entries(events)
        .filter(([, data]) => check(filter, data))
        .map(([name]) => name);
    expect(which({ $and: [one, two] })).toEqual(['both']);
    expect(which({ $or: [one, two] })).toEqual(['both', 'first', 'second']);
    expect(which({ $not: one })).toEqual(['second', 'none']);
    expect(which({ $not: { $or: [one, two] } })).toEqual(['none']);
    expect(which({ $or: [one, two], $not: { $and: [one, two] } })).toEqual(['first', 'second']);
  });
});

describe('matches: NFT examples', () => {
  const sale = (data: Record<string, unknown>) => ({ contract: CONTRACT, token_id: '1002', owner: OTHER, ...data });

  it('one contract, written in mixed case', () => {
    const filter = { 'data.contract': CONTRACT_MIXED };
    expect(check(filter, sale({}))).toBe(true);
    expect(check(filter, sale({ contract: DEAD }))).toBe(false);
  });

  it('a price floor in wei above 2^64', () => {
    const filter = { type: 'NEW_NFT', 'data.price': { $gte: '20000000000000000000' } };
    expect(check(filter, sale({ price: '20000000000000000000' }))).toBe(true);
    expect(check(filter, sale({ price: '100000000000000000000' }))).toBe(true);
    expect(check(filter, sale({ price: '19999999999999999999' }))).toBe(false);
    expect(check(filter, sale({}))).toBe(false);
  });

  it('a token id range', () => {
    const filter = { 'data.token_id': { $gte: '1000', $lte: '1999' } };
    expect(['999', '1000', '1002', '1999', '2000', 1500].map((id) => check(filter, sale({ token_id: id })))).toEqual([
      false,
      true,
      true,
      true,
      false,
      true,
    ]);
  });

  it('a set of owner addresses', () => {
    const owners = [OTHER, DEAD].map(normaliseSetValue);
    const filter = { 'data.to': { $in_set: true } };
    expect(check(filter, { to: DEAD.toUpperCase().replace('0X', '0x') }, 'MEMBER_NFT_ADD', owners)).toBe(true);
    expect(check(filter, { to: CONTRACT }, 'MEMBER_NFT_ADD', owners)).toBe(false);
  });

  it('$or of two collections, without burns ($not)', () => {
    const filter = {
      $or: [{ 'data.contract': CONTRACT }, { 'data.contract': OTHER.toUpperCase().replace('0X', '0x') }],
      $not: { 'data.to': DEAD },
    };
    expect(check(filter, { contract: CONTRACT, to: OTHER }, 'MEMBER_NFT_SUB')).toBe(true);
    expect(check(filter, { contract: OTHER, to: OTHER }, 'MEMBER_NFT_SUB')).toBe(true);
    expect(check(filter, { contract: CONTRACT, to: DEAD.toLowerCase() }, 'MEMBER_NFT_SUB')).toBe(false);
    expect(check(filter, { contract: DEAD, to: OTHER }, 'MEMBER_NFT_SUB')).toBe(false);
  });

  it('an item of an array: the first merged token id', () => {
    const filter = { type: 'MEMBER_NFT_MERGE_ADD', 'data.merged_token_ids.0': { $lt: '1003' } };
    expect(check(filter, { merged_token_ids: ['1002', '1003'] }, 'MEMBER_NFT_MERGE_ADD')).toBe(true);
    expect(check(filter, { merged_token_ids: ['1003'] }, 'MEMBER_NFT_MERGE_ADD')).toBe(false);
    expect(check(filter, { merged_token_ids: [] }, 'MEMBER_NFT_MERGE_ADD')).toBe(false);
  });
});

describe('matches: an event is read once, whatever its filters', () => {
  const DIGITS = 65_000;
  /** Ten webhooks' filters of 353 `$lt` tests each, the last of webhook k bounded by k. */
  const filters = Array.from({ length: 10 }, (_, k) => parseFilter(hostileFilter(String(k)).filter));

  it('the hostile filters decide by exact values against a 65,000-digit string', () => {
    expect(hostileFilter('1').tests).toBe(353);
    const results = (v: string) => {
      const values = new EventValues({ type: 'NEW_NFT', data: { v } });
      return filters.map((filter) => matches(filter, values, noSet));
    };
    // 65,000 nines: below no bound, every test runs and none holds.
    expect(results('9'.repeat(DIGITS))).toEqual(Array(10).fill(false));
    // 1 written with 64,999 leading zeros: below the last bound of webhooks 2 to 9 only.
    expect(results(`${'0'.repeat(DIGITS - 1)}1`)).toEqual([
      false,
      false,
      true,
      true,
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    // 0 written with 65,000 digits: below every bound but webhook 0's last.
    expect(results('0'.repeat(DIGITS))).toEqual(Array(10).fill(true));
  });

  it("a value at a path is read once per event, across every test of every webhook's filter", () => {
    let reads = 0;
    const data = new Proxy(
      { v: '9'.repeat(DIGITS) },
      {
        get(target, key, receiver) {
          if (key === 'v') reads++;
          return Reflect.get(target, key, receiver);
        },
      },
    );
    const values = new EventValues({ type: 'NEW_NFT', data });
    expect(filters.map((filter) => matches(filter, values, noSet))).toEqual(Array(10).fill(false));
    expect(reads).toBe(1);
  });

  it('digit strings compare by their digits, never through BigInt', () => {
    const bigInt = vi.spyOn(globalThis, 'BigInt');
    expect(check({ 'data.v': { $gt: '18446744073709551616' } }, { v: '18446744073709551617' })).toBe(true);
    expect(check({ 'data.v': { $lt: '000000000000000000002' } }, { v: '00000000000000000000000001' })).toBe(true);
    expect(matches(filters[9] as (typeof filters)[number], { type: 'T', data: { v: '7'.repeat(DIGITS) } }, noSet)).toBe(
      false,
    );
    expect(bigInt).not.toHaveBeenCalled();
  });
});
