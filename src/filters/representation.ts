// The one place value sets and filter trials become JSON.
import { encodeValueCursor, VALUE_CURSOR } from '../core/pages';

/** A value set's change: its webhook (an exact integer) and its size after. */
export const changeJson = (webhookId: string, count: number) => `{"webhook_id":${webhookId},"count":${count}}`;

/**
 * A page of a value set from `limit + 1` values read: the first `limit`, the set's size, and the
 * cursor after the last (null when no value follows).
 */
export function valuesPageJson(webhookId: string, values: string[], count: number, limit: number): string {
  const shown = values.slice(0, limit);
  const next =
    values.length > limit ? JSON.stringify(encodeValueCursor(shown[limit - 1] as string, VALUE_CURSOR)) : 'null';
  return `{"webhook_id":${webhookId},"values":${JSON.stringify(shown)},"count":${count},"next_cursor":${next}}`;
}

/** A filter trial's answer. */
export const matchJson = (matches: boolean) => `{"matches":${matches}}`;
