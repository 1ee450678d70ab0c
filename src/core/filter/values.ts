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

/** Whether `text` is a non-empty string of ASCII decimal digits (an integer of any size). */
export const isDigitString = (text: string) => text.length > 0 && digitsOnly(text);

/**
 * A value as the range operators read it: a JSON number as itself, a string of decimal digits as
 * the integer it writes (a BigInt: token ids and amounts in wei), anything else `null` (no order).
 * Numbers and BigInts compare by their exact values (`1.5 < 2n`), so mixed pairs need no rule.
 */
export function rangeValue(value: unknown): number | bigint | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && isDigitString(value)) {
    // Below 2^53 a double holds the integer exactly and is cheaper than a BigInt.
    return value.length <= 15 ? Number(value) : BigInt(value);
  }
  return null;
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
