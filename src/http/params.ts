// One parser per kind of request input, each a pure function: text in, a checked value out (or
// null, or a 400 failure). Every route that reads a kind of input reads it here.
import { MAX_ENDPOINT_RATE } from '../core/delivery-settings';
import { FILTER_MAX_BYTES, parseFilter } from '../core/filter/parse';
import { normaliseSetValue, SET_VALUE_MAX_LENGTH } from '../core/filter/values';
import { digitsOnly, idRange, parseId } from '../core/int64';
import { parseCursor, parseValueCursor } from '../core/pages';
import { isAppId, isUtf8, isWellFormed, MAX_APP_ID_LENGTH } from '../core/text';
import { MAX_BODY_BYTES, NumberText, parseJsonText } from './body';
import { badInput } from './envelope';
import { withoutOws } from './headers';

/** A run of percent-encoded bytes. */
const PERCENT_RUN = /(?:%[0-9A-Fa-f]{2})+/g;

/**
 * The query parameters of a request URL (none when it has no `?`). Its percent-encoded bytes must
 * be UTF-8 (400 otherwise): URLSearchParams would read `%FF` or `%ED%A0%80` (a surrogate's
 * encoding) as U+FFFD, another value than the one sent (an `app_id` of another application). A
 * request's URL spells every other character in ASCII, so each run of `%XX` is checked alone.
 */
export function queryOf(url: string): URLSearchParams {
  const q = url.indexOf('?');
  const query = q === -1 ? '' : url.slice(q + 1);
  for (const run of query.includes('%') ? (query.match(PERCENT_RUN) ?? []) : []) {
    const bytes = new Uint8Array(run.length / 3);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(run.slice(i * 3 + 1, i * 3 + 3), 16);
    if (!isUtf8(bytes)) throw badInput('the query must be UTF-8 once percent-decoded');
  }
  return new URLSearchParams(query);
}

/** A query parameter given at most once: its value, or undefined when absent; repeated is 400. */
export function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw badInput(`${name} must be given once`);
  return values[0];
}

/** An int64 id query parameter (`webhook_id`, `delivery_id`), exactly once. */
export function idParam(query: URLSearchParams, name = 'webhook_id'): string {
  const text = single(query, name);
  if (text === undefined) throw badInput(`${name} query parameter is required`);
  const id = parseId(text);
  if (id === null) throw badInput(idRange(name));
  return id;
}

/**
 * An int64 id field of a JSON body (`webhook_id`, `delivery_id`): a JSON integer (arriving as its
 * NumberText, see readJsonBody) or a string of decimal digits, as protobuf's JSON mapping writes
 * int64; 1 to 2^63 - 1.
 */
export function idField(raw: unknown, name = 'webhook_id'): string {
  if (raw === undefined) throw badInput(`${name} is required`);
  const text = typeof raw === 'string' ? raw : raw instanceof NumberText ? raw.text : null;
  const id = text === null ? null : parseId(text);
  if (id === null) throw badInput(idRange(name));
  return id;
}

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** A page size: decimal digits, 1 to MAX_PAGE_SIZE; null otherwise. */
export function parseLimit(text: string): number | null {
  if (text.length === 0 || text.length > 8 || !digitsOnly(text)) return null;
  const n = Number(text);
  return n >= 1 && n <= MAX_PAGE_SIZE ? n : null;
}

/** The `limit` query parameter, at most once: 1 to MAX_PAGE_SIZE, default DEFAULT_PAGE_SIZE. */
export function limitParam(query: URLSearchParams): number {
  const text = single(query, 'limit');
  if (text === undefined) return DEFAULT_PAGE_SIZE;
  const n = parseLimit(text);
  if (n === null) throw badInput(`limit must be a whole number from 1 to ${MAX_PAGE_SIZE}`);
  return n;
}

/** The `cursor` query parameter of a list (its cursor `prefix`), at most once: the id it continues from. */
export function cursorParam(query: URLSearchParams, prefix: string): string | undefined {
  const text = single(query, 'cursor');
  if (text === undefined) return undefined;
  const id = parseCursor(text, prefix);
  if (id === null) throw badInput('cursor is not a next_cursor this API issued');
  return id;
}

/** The `is_enabled` list filter: exactly `true` or `false`; null otherwise. */
export function parseEnabledFilter(text: string): boolean | null {
  return text === 'true' ? true : text === 'false' ? false : null;
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

/** Longest webhook description, in characters. */
export const MAX_DESCRIPTION_LENGTH = 256;

/**
 * A webhook's `description` field: a string of at most 256 characters (Unicode code points), or
 * null; 400 otherwise, and for a string with a lone surrogate (see isWellFormed).
 */
export function descriptionField(value: unknown): string | null {
  if (value === null) return null;
  if (typeof value === 'string' && !isWellFormed(value)) throw badInput('description must be well-formed Unicode');
  if (typeof value !== 'string' || [...value].length > MAX_DESCRIPTION_LENGTH) {
    throw badInput(`description must be null or a string of at most ${MAX_DESCRIPTION_LENGTH} characters`);
  }
  return value;
}

/** A webhook's `rate_limit` field (deliveries per second): a whole number from 1 to 1,000, or null; 400 otherwise. */
export function rateLimitField(value: unknown): number | null {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_ENDPOINT_RATE) {
    throw badInput(`rate_limit must be null or a whole number from 1 to ${MAX_ENDPOINT_RATE}`);
  }
  return value;
}

/** A webhook's `ordering`: null (none) or "fifo" (one delivery at a time, in order); 400 otherwise. */
export function orderingField(value: unknown): 'fifo' | null {
  if (value === null || value === 'fifo') return value;
  throw badInput('ordering must be null or "fifo"');
}

/** The most bytes of a webhook's POST or PATCH body: room for a filter of its most bytes besides the rest. */
export const MAX_WEBHOOK_BODY_BYTES = MAX_BODY_BYTES + FILTER_MAX_BYTES;

/**
 * A filter as a request sends it (`name` is what refusals call it): null (no filter), or a filter
 * object that follows the grammar, as its JSON text with every number written as it was sent (read
 * again from the body's `bytes`, a JSON object with the filter at `name`). An invalid filter is 400
 * naming the key (`filter.$or.1.data.price.$gte: must be ...`).
 */
export function filterField(value: unknown, bytes: Uint8Array, name = 'filter'): string | null {
  if (value === null) return null;
  // InvalidFilter is an InvalidInput: the reply is 400 with the key named.
  parseFilter(value, name);
  const exact = parseJsonText(new TextDecoder().decode(bytes), true) as Record<string, unknown>;
  return JSON.stringify(exact[name]);
}

/** The `cursor` query parameter of a list of strings (a value set), at most once: the value it continues after. */
export function valueCursorParam(query: URLSearchParams, prefix: string): string | undefined {
  const text = single(query, 'cursor');
  if (text === undefined) return undefined;
  const value = parseValueCursor(text, prefix);
  if (value === null) throw badInput('cursor is not a next_cursor this API issued');
  return value;
}

/**
 * A value set's `add` or `remove` field: absent (none), or an array of strings of 1 to 256
 * characters (UTF-16 code units, as the matcher counts them) and well-formed (stored text), each
 * normalised as sets store it (addresses lower-cased); 400 otherwise.
 */
export function setValuesField(value: unknown, name: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw badInput(`${name} must be an array of strings`);
  return value.map((item, i) => {
    if (typeof item !== 'string' || item.length === 0 || item.length > SET_VALUE_MAX_LENGTH) {
      throw badInput(`${name}.${i} must be a string of 1 to ${SET_VALUE_MAX_LENGTH} characters`);
    }
    if (!isWellFormed(item)) throw badInput(`${name}.${i} must be well-formed Unicode`);
    return normaliseSetValue(item);
  });
}

/**
 * An application id (a query parameter or a body field named `app_id`): 1 to MAX_APP_ID_LENGTH
 * characters without control characters or lone surrogates, as an event's `app_id`; 400 otherwise.
 */
export function appIdField(value: unknown): string {
  if (value === undefined) throw badInput('app_id is required');
  if (typeof value !== 'string' || !isAppId(value) || [...value].length > MAX_APP_ID_LENGTH) {
    throw badInput(
      `app_id must be a string of 1 to ${MAX_APP_ID_LENGTH} characters, without control characters or lone surrogates`,
    );
  }
  return value;
}

const EVENT_ID = /^evt_[0-9a-f]{32}$/;

/** The query's `event_id`: `evt_` and 32 lowercase hex digits, as the service gives them. */
export function eventIdParam(query: URLSearchParams): string {
  const text = single(query, 'event_id');
  if (text === undefined) throw badInput('event_id is required');
  if (!EVENT_ID.test(text)) throw badInput('event_id must be evt_ followed by 32 lowercase hex digits');
  return text;
}
