// One parser per kind of input, each a pure function: text in, a checked value out (or null /
// a 400 failure). Every route that reads a kind of input reads it here.
import { NumberText } from '../http/body';
import { badInput } from '../http/envelope';
import { withoutOws } from '../http/headers';

const INT64_MAX = '9223372036854775807';
export const ID_RANGE = 'webhook_id must be a decimal integer from 1 to 9223372036854775807';

/** True when every character of `text` is an ASCII decimal digit. */
const digitsOnly = (text: string) => {
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch < 48 || ch > 57) return false;
  }
  return true;
};

/**
 * A webhook id as canonical decimal text (no leading zeros), or `null` when `text` is not one:
 * only decimal digits, value 1..2^63-1. Ids stay text all the way to SQL, so they are never
 * rounded through a double.
 */
export function parseWebhookId(text: string): string | null {
  if (text.length === 0 || text.length > 64 || !digitsOnly(text)) return null;
  let start = 0;
  while (start < text.length - 1 && text.charCodeAt(start) === 48) start++;
  const digits = start === 0 ? text : text.slice(start);
  if (digits === '0') return null;
  if (digits.length > INT64_MAX.length) return null;
  if (digits.length === INT64_MAX.length && digits > INT64_MAX) return null;
  return digits;
}

/** The query parameters of a request URL (none when it has no `?`). */
export function queryOf(url: string): URLSearchParams {
  const q = url.indexOf('?');
  return new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
}

/** A query parameter given at most once: its value, or undefined when absent; repeated is 400. */
export function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw badInput(`${name} must be given once`);
  return values[0];
}

/** The `webhook_id` query parameter, exactly once (DELETE, and GET of one webhook). */
export function webhookIdParam(query: URLSearchParams): string {
  const text = single(query, 'webhook_id');
  if (text === undefined) throw badInput('webhook_id query parameter is required');
  const id = parseWebhookId(text);
  if (id === null) throw badInput(ID_RANGE);
  return id;
}

/**
 * A `webhook_id` of a JSON body (PUT, and the delivery operations): a JSON integer (arriving as
 * its NumberText, see readJsonBody) or a string of decimal digits, as protobuf's JSON mapping
 * writes int64; 1 to 2^63 - 1.
 */
export function webhookIdField(raw: unknown): string {
  if (raw === undefined) throw badInput('webhook_id is required');
  const text = typeof raw === 'string' ? raw : raw instanceof NumberText ? raw.text : null;
  const webhookId = text === null ? null : parseWebhookId(text);
  if (webhookId === null) throw badInput(ID_RANGE);
  return webhookId;
}

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** The `limit` query parameter, at most once: 1 to MAX_PAGE_SIZE, default DEFAULT_PAGE_SIZE. */
export function limitParam(query: URLSearchParams): number {
  const text = single(query, 'limit');
  if (text === undefined) return DEFAULT_PAGE_SIZE;
  const n = parseLimit(text);
  if (n === null) throw badInput(`limit must be a whole number from 1 to ${MAX_PAGE_SIZE}`);
  return n;
}

/** The `cursor` query parameter, at most once: the id it continues from, or undefined. */
export function cursorParam(query: URLSearchParams, prefix?: string): string | undefined {
  const text = single(query, 'cursor');
  if (text === undefined) return undefined;
  const id = parseCursor(text, prefix);
  if (id === null) throw badInput('cursor is not a next_cursor this API issued');
  return id;
}

/** A page size: decimal digits, 1 to MAX_PAGE_SIZE; null otherwise. */
export function parseLimit(text: string): number | null {
  if (text.length === 0 || text.length > 8 || !digitsOnly(text)) return null;
  const n = Number(text);
  return n >= 1 && n <= MAX_PAGE_SIZE ? n : null;
}

/** The `is_enabled` list filter: exactly `true` or `false`; null otherwise. */
export function parseEnabledFilter(text: string): boolean | null {
  return text === 'true' ? true : text === 'false' ? false : null;
}

// A cursor is the last id of a page, versioned and base64url-encoded: opaque to clients, so its
// form can change without breaking them. Each list has its own prefix: a cursor of one list is
// not a cursor of another.
const CURSOR_PREFIX = 'w1:';
/** The prefix of the delivery log's cursors. */
export const DELIVERY_CURSOR = 'd1:';

/** The cursor that continues a list after `id`. */
export function encodeCursor(id: string, prefix = CURSOR_PREFIX): string {
  return btoa(prefix + id)
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/** The id a cursor continues after, or null when `text` is not a cursor we issued for that list. */
export function parseCursor(text: string, prefix = CURSOR_PREFIX): string | null {
  if (text.length === 0 || text.length > 64 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  let decoded: string;
  try {
    decoded = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  } catch {
    return null;
  }
  if (!decoded.startsWith(prefix)) return null;
  const id = decoded.slice(prefix.length);
  // Only the canonical spelling: one cursor text per position.
  return parseWebhookId(id) === id && encodeCursor(id, prefix) === text ? id : null;
}

// The shape of a bookmark D1 issues: hex groups joined by `-` (e.g.
// 0000002c-00000002-00004f68-b8c5a0fd...). The session constraints are not bookmarks.
const BOOKMARK = /^[0-9a-f]+(?:-[0-9a-f]+)+$/i;
export const MAX_BOOKMARK_LENGTH = 128;

/** An `X-D1-Bookmark` value, or null when it is not shaped like a bookmark D1 issues. */
export function parseBookmark(text: string): string | null {
  return text.length <= MAX_BOOKMARK_LENGTH && BOOKMARK.test(text) ? text : null;
}

/**
 * An `Idempotency-Key` header value: 1 to 255 visible ASCII characters once the whitespace around
 * it is removed (the same key with or without it is one key); null otherwise.
 */
export function parseIdempotencyKey(header: string): string | null {
  const text = withoutOws(header);
  return /^[\x21-\x7e]{1,255}$/.test(text) ? text : null;
}
