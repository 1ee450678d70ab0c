// The filter grammar: what parseFilter accepts, up to each limit, and every refusal, which names
// the offending key by its path in the filter.
import { describe, expect, it } from 'vitest';
import {
  FILTER_MAX_BYTES,
  FILTER_MAX_DEPTH,
  FILTER_MAX_IN,
  FILTER_MAX_KEYS,
  InvalidFilter,
  PATH_MAX_SEGMENTS,
  parseFilter,
} from '../src/core/filter/parse';

/** The refusal of `value` as an X-Error-Detail would carry it, or null when it is accepted. */
function refusal(value: unknown, name?: string): string | null {
  try {
    parseFilter(value, name);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidFilter);
    const { path, reason, message } = err as InvalidFilter;
    expect(message).toBe(`${path}: ${reason}`);
    expect(message).toMatch(/^[ -~]+$/);
    return message;
  }
}

/** `depth` filters nested through $not, the innermost holding one condition. */
const nested = (depth: number): unknown => (depth === 1 ? { type: 'NEW_NFT' } : { $not: nested(depth - 1) });

const CONTRACT = '0x5a1f8e1b7c3d9a2e4f60718293a4b5c6d7e8f901';

describe('parseFilter: what it accepts', () => {
  it.each([
    ['an empty filter (it matches every event)', {}],
    ['a bare scalar of each kind', { type: 'NEW_NFT', 'data.n': 42, 'data.b': false, 'data.z': null }],
    [
      'every operator',
      {
        'data.a': { $eq: 'x' },
        'data.b': { $ne: 1 },
        'data.c': { $in: ['x', 1, true, null] },
        'data.d': { $nin: [2] },
        'data.e': { $gt: 1.5, $gte: '0', $lt: '340282366920938463463374607431768211456', $lte: -3 },
        'data.f': { $exists: true },
        'data.g': { $exists: false },
        'data.h': { $prefix: '0x' },
        'data.i': { $in_set: true },
      },
    ],
    ['$and, $or and $not', { $and: [{ type: 'A' }], $or: [{ type: 'A' }, { type: 'B' }], $not: { 'data.x': 1 } }],
    ['array indexes, digits, _ and - in paths', { 'data.items.0.token_id': '1', 'data.a-b_C9': 1 }],
    ['the path `data` itself', { data: { $exists: true } }],
    [`filters nested ${FILTER_MAX_DEPTH} deep`, nested(FILTER_MAX_DEPTH)],
    [
      `${FILTER_MAX_KEYS} keys`,
      Object.fromEntries(Array.from({ length: FILTER_MAX_KEYS }, (_, i) => [`data.k${i}`, i])),
    ],
    [
      `${FILTER_MAX_KEYS} filters in an $or`,
      { $or: Array.from({ length: FILTER_MAX_KEYS }, (_, i) => ({ 'data.n': i })) },
    ],
    [`$in of ${FILTER_MAX_IN} scalars`, { 'data.n': { $in: Array.from({ length: FILTER_MAX_IN }, (_, i) => i) } }],
    [`a path of ${PATH_MAX_SEGMENTS} segments`, { [['data', ...Array(PATH_MAX_SEGMENTS - 1).fill('a')].join('.')]: 1 }],
    ['a segment of 64 characters', { [`data.${'s'.repeat(64)}`]: 1 }],
    ['a mixed-case address', { 'data.contract': CONTRACT.toUpperCase().replace('0X', '0x') }],
  ])('accepts %s', (_, filter) => {
    expect(refusal(filter)).toBeNull();
  });

  it(`accepts a filter of exactly ${FILTER_MAX_BYTES} bytes of UTF-8 JSON and refuses one more`, () => {
    const base = JSON.stringify({ 'data.s': '' });
    // 'é' is two bytes in UTF-8: the limit is on bytes, not characters.
    const fill = FILTER_MAX_BYTES - base.length;
    const exact = { 'data.s': `${'é'.repeat(Math.floor(fill / 2))}${'a'.repeat(fill % 2)}` };
    expect(new TextEncoder().encode(JSON.stringify(exact)).byteLength).toBe(FILTER_MAX_BYTES);
    expect(refusal(exact)).toBeNull();
    expect(refusal({ 'data.s': `${exact['data.s']}a` })).toBe(
      `filter: must be at most ${FILTER_MAX_BYTES} bytes of JSON`,
    );
  });

  it('compiles what matching needs: strings that are addresses lower-cased, range bounds read once', () => {
    const filter = parseFilter({
      'data.contract': CONTRACT.toUpperCase().replace('0X', '0x'),
      'data.price': { $gte: '0018446744073709551617', $lt: 100.5, $gt: -2 },
    });
    expect(filter.clauses).toEqual([
      { kind: 'path', key: 'data.contract', path: ['data', 'contract'], tests: [{ op: 'eq', value: CONTRACT }] },
      {
        kind: 'path',
        key: 'data.price',
        path: ['data', 'price'],
        tests: [
          // A digit string as its digits without leading zeros; a number as itself and its integer part.
          { op: 'gte', bound: { number: null, digits: '18446744073709551617', fraction: false } },
          { op: 'lt', bound: { number: 100.5, digits: '100', fraction: true } },
          { op: 'gt', bound: { number: -2, digits: null, fraction: false } },
        ],
      },
    ]);
  });

  it('names refusals after the name it is given', () => {
    expect(refusal({ 'data.x': [] }, 'body.filter')).toBe(
      'body.filter.data.x: must be a JSON scalar or an object of operators',
    );
  });
});

describe('parseFilter: every refusal names the key', () => {
  const deep = `filter${'.$not'.repeat(FILTER_MAX_DEPTH)}`;
  it.each([
    // The filter itself
    ['null', null, 'filter: must be a JSON object'],
    ['an array', [{ type: 'A' }], 'filter: must be a JSON object'],
    ['a string', '{"type":"A"}', 'filter: must be a JSON object'],
    ['a Date', new Date(0), 'filter: must be a JSON object'],
    ['too deep', nested(FILTER_MAX_DEPTH + 1), `${deep}: filters nest at most ${FILTER_MAX_DEPTH} deep`],
    [
      'too many keys',
      Object.fromEntries(Array.from({ length: FILTER_MAX_KEYS + 1 }, (_, i) => [`data.k${i}`, i])),
      `filter: must have at most ${FILTER_MAX_KEYS} keys`,
    ],
    // $and, $or, $not
    ['an empty $and', { $and: [] }, `filter.$and: must be an array of 1 to ${FILTER_MAX_KEYS} filters`],
    [
      'an $or that is not an array',
      { $or: { type: 'A' } },
      `filter.$or: must be an array of 1 to ${FILTER_MAX_KEYS} filters`,
    ],
    [
      `an $or of ${FILTER_MAX_KEYS + 1} filters`,
      { $or: Array.from({ length: FILTER_MAX_KEYS + 1 }, () => ({ type: 'A' })) },
      `filter.$or: must be an array of 1 to ${FILTER_MAX_KEYS} filters`,
    ],
    [
      'an $or item that is not an object',
      { $or: [{ type: 'A' }, 'B'] },
      'filter.$or.1: must be a JSON object (a filter)',
    ],
    ['a $not that is an array', { $not: [{ type: 'A' }] }, 'filter.$not: must be a JSON object (a filter)'],
    ['an unknown $ key', { $nor: [{ type: 'A' }] }, 'filter.$nor: is not $and, $or, $not or a dotted path'],
    ['an operator at the top', { $eq: 1 }, 'filter.$eq: is not $and, $or, $not or a dotted path'],
    // Paths
    [
      'a path outside the event',
      { contract: CONTRACT },
      'filter.contract: a path starts at the event object: data or type',
    ],
    ['a path into type', { 'type.name': 'A' }, 'filter.type.name: type is a string: a path cannot go into it'],
    [
      'an empty segment',
      { 'data..x': 1 },
      'filter.data..x: a path is segments of 1 to 64 letters, digits, _ or - joined by dots',
    ],
    [
      'a trailing dot',
      { 'data.x.': 1 },
      'filter.data.x.: a path is segments of 1 to 64 letters, digits, _ or - joined by dots',
    ],
    ['an empty key', { '': 1 }, 'filter."": a path is segments of 1 to 64 letters, digits, _ or - joined by dots'],
    [
      'a space',
      { 'data.a b': 1 },
      'filter."data.a b": a path is segments of 1 to 64 letters, digits, _ or - joined by dots',
    ],
    [
      'a character outside ASCII, and a line break, escaped',
      { 'data.prix\u00e9\n': 1 },
      'filter."data.prix\\u00e9\\n": a path is segments of 1 to 64 letters, digits, _ or - joined by dots',
    ],
    [
      'a segment of 65 characters',
      { [`data.${'s'.repeat(65)}`]: 1 },
      `filter."data.${'s'.repeat(59)}...": a path is segments of 1 to 64 letters, digits, _ or - joined by dots`,
    ],
    [
      `a path of ${PATH_MAX_SEGMENTS + 1} segments`,
      { [['data', ...Array(PATH_MAX_SEGMENTS).fill('a')].join('.')]: 1 },
      `filter.data${'.a'.repeat(PATH_MAX_SEGMENTS)}: a path has at most ${PATH_MAX_SEGMENTS} segments`,
    ],
    // Conditions
    [
      'an array condition',
      { 'data.ids': ['1', '2'] },
      'filter.data.ids: must be a JSON scalar or an object of operators',
    ],
    ['an empty operator object', { 'data.x': {} }, 'filter.data.x: an object of operators must name at least one'],
    [
      'a nested field instead of a dotted path',
      { data: { contract: CONTRACT } },
      'filter.data.contract: is not an operator: name a nested field with a dotted path (data.a.b)',
    ],
    [
      'an unknown operator',
      { 'data.x': { $regex: '^a' } },
      'filter.data.x.$regex: is not an operator ($eq, $ne, $in, $nin, $gt, $gte, $lt, $lte, $exists, $prefix, $in_set)',
    ],
    [
      'an unknown operator among known ones',
      { 'data.x': { $gt: 1, $between: [1, 2] } },
      'filter.data.x.$between: is not an operator ($eq, $ne, $in, $nin, $gt, $gte, $lt, $lte, $exists, $prefix, $in_set)',
    ],
    // Operators
    ['$eq of an object', { 'data.x': { $eq: { a: 1 } } }, 'filter.data.x.$eq: must be a JSON scalar'],
    ['$ne of an array', { 'data.x': { $ne: [1] } }, 'filter.data.x.$ne: must be a JSON scalar'],
    [
      '$in of a scalar',
      { 'data.x': { $in: 'a' } },
      `filter.data.x.$in: must be an array of 1 to ${FILTER_MAX_IN} JSON scalars`,
    ],
    [
      'an empty $nin',
      { 'data.x': { $nin: [] } },
      `filter.data.x.$nin: must be an array of 1 to ${FILTER_MAX_IN} JSON scalars`,
    ],
    [
      `$in of ${FILTER_MAX_IN + 1} scalars`,
      { 'data.x': { $in: Array.from({ length: FILTER_MAX_IN + 1 }, (_, i) => i) } },
      `filter.data.x.$in: must be an array of 1 to ${FILTER_MAX_IN} JSON scalars`,
    ],
    ['$nin holding an object', { 'data.x': { $nin: [1, { a: 1 }] } }, 'filter.data.x.$nin.1: must be a JSON scalar'],
    [
      '$gt of a boolean',
      { 'data.x': { $gt: true } },
      'filter.data.x.$gt: must be a number or a string of decimal digits',
    ],
    [
      '$gte of a signed string',
      { 'data.x': { $gte: '-1' } },
      'filter.data.x.$gte: must be a number or a string of decimal digits',
    ],
    [
      '$lt of a decimal fraction',
      { 'data.x': { $lt: '1.5' } },
      'filter.data.x.$lt: must be a number or a string of decimal digits',
    ],
    [
      '$lte of an empty string',
      { 'data.x': { $lte: '' } },
      'filter.data.x.$lte: must be a number or a string of decimal digits',
    ],
    [
      '$gt of hexadecimal',
      { 'data.x': { $gt: '0x10' } },
      'filter.data.x.$gt: must be a number or a string of decimal digits',
    ],
    [
      '$gt of NaN',
      { 'data.x': { $gt: Number.NaN } },
      'filter.data.x.$gt: must be a number or a string of decimal digits',
    ],
    ['$exists of a string', { 'data.x': { $exists: 'true' } }, 'filter.data.x.$exists: must be true or false'],
    ['$exists of 1', { 'data.x': { $exists: 1 } }, 'filter.data.x.$exists: must be true or false'],
    ['$prefix of a number', { 'data.x': { $prefix: 1 } }, 'filter.data.x.$prefix: must be a non-empty string'],
    ['an empty $prefix', { 'data.x': { $prefix: '' } }, 'filter.data.x.$prefix: must be a non-empty string'],
    ['$in_set false', { 'data.x': { $in_set: false } }, 'filter.data.x.$in_set: must be true'],
    ['$in_set of a list', { 'data.x': { $in_set: ['a'] } }, 'filter.data.x.$in_set: must be true'],
    // Deep inside
    [
      'a range deep in an $or',
      { $or: [{ type: 'A' }, { 'data.price': { $gte: 1.5e3, $lt: 'lots' } }] },
      'filter.$or.1.data.price.$lt: must be a number or a string of decimal digits',
    ],
    [
      'an operator under $and and $not',
      { $and: [{ $not: { 'data.owner': { $in_set: 1 } } }] },
      'filter.$and.0.$not.data.owner.$in_set: must be true',
    ],
  ])('refuses %s', (_, filter, message) => {
    expect(refusal(filter)).toBe(message);
  });

  it('refuses what is not JSON (a cycle) as not a JSON object', () => {
    const cyclic: Record<string, unknown> = { type: 'A' };
    cyclic.self = cyclic;
    expect(refusal(cyclic)).toBe('filter: must be a JSON object');
  });
});
