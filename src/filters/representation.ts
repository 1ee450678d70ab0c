// The one place value sets and filter trials become JSON.
import type { Why } from '../core/filter/match';
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

/**
 * A filter trial's answer from its why (null: it matches): `{"matches":true}`, or
 * `{"matches":false,"why":{"path", "operator", "expected", "found"?}}` with the operand and the
 * value as the JSON text they were sent as.
 */
export function trialJson(why: Why | null): string {
  if (why === null) return '{"matches":true}';
  const found = why.found === undefined ? '' : `,"found":${why.found}`;
  return `{"matches":false,"why":{"path":${JSON.stringify(why.path)},"operator":${JSON.stringify(why.operator)},"expected":${why.expected}${found}}}`;
}
