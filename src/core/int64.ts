// int64 ids (webhooks, deliveries) travel as canonical decimal text, so they are never rounded
// through a JavaScript double; SQLite turns the text into an INTEGER (CAST) and back.

const INT64_MAX = '9223372036854775807';

/** True when every character of `text` is an ASCII decimal digit. */
export const digitsOnly = (text: string) => {
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch < 48 || ch > 57) return false;
  }
  return true;
};

/**
 * An id as canonical decimal text (no leading zeros), or `null` when `text` is not one: only
 * decimal digits, value 1 to 2^63 - 1.
 */
export function parseId(text: string): string | null {
  if (text.length === 0 || text.length > 64 || !digitsOnly(text)) return null;
  let start = 0;
  while (start < text.length - 1 && text.charCodeAt(start) === 48) start++;
  const digits = start === 0 ? text : text.slice(start);
  if (digits === '0') return null;
  if (digits.length > INT64_MAX.length) return null;
  if (digits.length === INT64_MAX.length && digits > INT64_MAX) return null;
  return digits;
}

/** What a refused id is told: the range of every id. */
export const idRange = (name: string) => `${name} must be a decimal integer from 1 to ${INT64_MAX}`;
