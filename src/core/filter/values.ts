// The values a filter compares: JSON scalars, addresses (compared without regard to case) and the
// numbers of the range operators (JSON numbers, or decimal strings read as integers of any size).
import { digitsOnly } from '../int64';

/** A JSON scalar: what an equality condition compares with. */
export type Scalar = string | number | boolean | null;

/** The longest value a webhook's value set holds (characters). */
export const SET_VALUE_MAX_LENGTH = 256;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Whether `value` is a JSON scalar (a finite number, a string, a boolean or null). */
export const isScalar = (value: unknown): value is Scalar =>
  value === null ||
  typeof value === 'string' ||
  typeof value === 'boolean' ||
  (typeof value === 'number' && Number.isFinite(value));

/** Whether `text` is an address: `0x` followed by 40 hexadecimal digits, in any case. */
export const isAddress = (text: string) => text.length === 42 && ADDRESS.test(text);

/**
 * A string as filters compare it and value sets store it: an address lower-cased, anything else
 * unchanged. The one rule for conditions and sets alike.
 */
export const normaliseSetValue = (value: string): string => (isAddress(value) ? value.toLowerCase() : value);

/** A scalar as equality compares it: strings through `normaliseSetValue`, the others unchanged. */
export const normaliseScalar = (value: Scalar): Scalar =>
  typeof value === 'string' ? normaliseSetValue(value) : value;

/**
 * A value as the range operators order it, worked out once (per bound when a filter is compiled,
 * per path and event when one is matched), so that a test compares without parsing: a JSON number
 * keeps `number` (numbers compare with numbers as doubles); every value at or above zero has
 * `digits`, its integer part's decimal digits without leading zeros (`"0"` for zero), and
 * `fraction` when a number has a fractional part above them. A string of decimal digits is the
 * integer it writes, of any length (token ids and amounts in wei). Only a number is below zero,
 * and it has no `digits`.
 */
export interface Ordered {
  readonly number: number | null;
  readonly digits: string | null;
  readonly fraction: boolean;
}

/** Whether `text` is a non-empty string of ASCII decimal digits (an integer of any size). */
export const isDigitString = (text: string) => text.length > 0 && digitsOnly(text);

/** Below 2^53 a double's integer part prints exactly as itself; above it every double is an integer. */
const integerDigits = (n: number) => (n < 2 ** 53 ? String(Math.floor(n)) : BigInt(n).toString());

/**
 * A value as the range operators read it: a JSON number, or a string of decimal digits; anything
 * else `null` (no order). Linear in the value's length, once: what a test then does is not.
 */
export function rangeValue(value: unknown): Ordered | null {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
    if (value < 0) return { number: value, digits: null, fraction: false };
    return { number: value, digits: integerDigits(value), fraction: !Number.isInteger(value) };
  }
  if (typeof value === 'string' && isDigitString(value)) {
    let start = 0;
    while (start < value.length - 1 && value.charCodeAt(start) === 48) start++;
    return { number: null, digits: start === 0 ? value : value.slice(start), fraction: false };
  }
  return null;
}

/**
 * Two integers' digits (without leading zeros) compared: the longer is the larger, and digits of
 * one length compare as text. Negative, zero or positive as `a` is below, at or above `b`.
 */
export const compareDigits = (a: string, b: string): number =>
  a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;

/**
 * Two ordered values compared by their exact values: negative, zero or positive as `a` is below,
 * at or above `b`. Two numbers compare as doubles; a number below zero is below every digit string;
 * otherwise the integer parts decide, then a fraction is above the integer it follows.
 */
export function compareOrdered(a: Ordered, b: Ordered): number {
  if (a.number !== null && b.number !== null) return a.number < b.number ? -1 : a.number > b.number ? 1 : 0;
  if (a.digits === null) return -1;
  if (b.digits === null) return 1;
  return compareDigits(a.digits, b.digits) || Number(a.fraction) - Number(b.fraction);
}

/**
 * A key of a scalar for a Set, distinct for distinct values of distinct types (`42` is not
 * `"42"`), after `normaliseScalar`.
 */
export const scalarKey = (value: Scalar): string =>
  typeof value === 'string' ? `s${normaliseSetValue(value)}` : typeof value === 'number' ? `n${value}` : String(value);

/** The most values one webhook's value set holds. */
export const SET_MAX_VALUES = 100_000;

/** The most values one call adds and removes together. */
export const SET_VALUES_PER_CALL = 1_000;
