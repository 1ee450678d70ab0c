// Keyset pages: a page is the rows after (or before) the last id of the page before, never an
// offset, so rows added or removed between two calls never make a page repeat or skip one. The
// cursor is that id, versioned and base64url-encoded: opaque to clients, so its form can change
// without breaking them. Each list has its own prefix: a cursor of one list is not one of another.
import { parseId } from './int64';

/** The webhook list's cursors. */
export const WEBHOOK_CURSOR = 'w1:';
/** The delivery log's cursors. */
export const DELIVERY_CURSOR = 'd1:';

/** The cursor that continues a list after `id`. */
export function encodeCursor(id: string, prefix: string): string {
  return btoa(prefix + id)
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/** The id a cursor continues after, or null when `text` is not a cursor issued for that list. */
export function parseCursor(text: string, prefix: string): string | null {
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
  return parseId(id) === id && encodeCursor(id, prefix) === text ? id : null;
}

/** A page of rows and the cursor of the next one (null on the last). */
export interface Page<T> {
  rows: T[];
  next: string | null;
}

/**
 * The page of `rows`, read with a limit of `limit + 1` (one more than the page shows, so a full
 * page knows whether another follows), and the cursor after its last row.
 */
export function pageOf<T>(rows: T[], limit: number, idOf: (row: T) => string, prefix: string): Page<T> {
  if (rows.length <= limit) return { rows, next: null };
  const shown = rows.slice(0, limit);
  return { rows: shown, next: encodeCursor(idOf(shown[limit - 1] as T), prefix) };
}

/** A value set's cursors: they continue after a value (a string), not an id. */
export const VALUE_CURSOR = 'v1:';

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

/** The cursor that continues a list of strings after `value`: its UTF-8, base64url-encoded. */
export const encodeValueCursor = (value: string, prefix: string) => base64url(new TextEncoder().encode(prefix + value));

/** The string a value cursor continues after, or null when `text` is not one issued for that list. */
export function parseValueCursor(text: string, prefix: string): string | null {
  if (text.length === 0 || text.length > 2048 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  let decoded: string;
  try {
    const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
    decoded = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(
      Uint8Array.from(binary, (ch) => ch.charCodeAt(0)),
    );
  } catch {
    return null;
  }
  if (!decoded.startsWith(prefix) || decoded.length === prefix.length) return null;
  const value = decoded.slice(prefix.length);
  return encodeValueCursor(value, prefix) === text ? value : null;
}
