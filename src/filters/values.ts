// A webhook's value set (what its filter's `$in_set` looks up): changed and paged through at its
// application's object, once D1 says the application has the webhook (404 otherwise: one answer for
// missing and foreign).
import type { Context } from 'hono';
import { SET_MAX_VALUES, SET_VALUES_PER_CALL } from '../core/filter/values';
import { VALUE_CURSOR } from '../core/pages';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { badInput, conflict, notFound, success } from '../http/envelope';
import { idField, idParam, limitParam, queryOf, setValuesField, valueCursorParam } from '../http/params';
import { type SessionStart, sessionStart, withD1 } from '../http/storage';
import { inObject } from '../platform/objects';
import { webhookState } from '../webhooks/store/reads';
import { changeJson, valuesPageJson } from './representation';

/** The most bytes of a values call's body: 1,000 values of 256 characters of up to 4 bytes each, and room. */
export const MAX_VALUES_BODY_BYTES = 1024 * 1024 + 8192;

/** 404 unless the calling application has the webhook (read in D1 from `start`). */
export async function requireOwned(c: Context<AppEnv>, webhookId: string, start: SessionStart = 'first-primary') {
  const state = await withD1(c, start, (db) => webhookState(db, webhookId, c.get('appId')));
  if (state === null) throw notFound();
}

/** POST's input: `webhook_id`, and `add` and `remove` (each absent or strings), at most 1,000 values in all. */
export function valuesChange(body: unknown): { webhookId: string; add: string[]; remove: string[] } {
  const fields = jsonObject(body);
  const webhookId = idField(fields.webhook_id);
  const add = setValuesField(fields.add, 'add');
  const remove = setValuesField(fields.remove, 'remove');
  if (add.length + remove.length > SET_VALUES_PER_CALL) {
    throw badInput(`add and remove hold at most ${SET_VALUES_PER_CALL} values together`);
  }
  const removed = new Set(remove);
  if (add.some((value) => removed.has(value))) throw badInput('a value is both in add and in remove');
  return { webhookId, add, remove };
}

/**
 * POST /v1.0/app/nft/webhook/values {"webhook_id", "add"?, "remove"?}: 200 with the set's size;
 * past the most values a set holds, 409 and nothing changed.
 */
export async function editValues(c: Context<AppEnv>): Promise<Response> {
  const { webhookId, add, remove } = valuesChange(
    (await readJsonBody(c.req.raw, { maxBytes: MAX_VALUES_BODY_BYTES })).value,
  );
  c.set('webhookId', webhookId);
  await requireOwned(c, webhookId);
  const result = await inObject(() =>
    c.env.APPLICATIONS.getByName(c.get('appId')).changeValues(webhookId, add, remove),
  );
  if (result.full) throw conflict(`a value set holds at most ${SET_MAX_VALUES} values`);
  return success(c, { value: changeJson(webhookId, result.count) });
}

/** GET /v1.0/app/nft/webhook/values?webhook_id=N&limit&cursor: a page of the set, in order, with its size. */
export async function readValues(c: Context<AppEnv>): Promise<Response> {
  const query = queryOf(c.req.url);
  const webhookId = idParam(query);
  c.set('webhookId', webhookId);
  const limit = limitParam(query);
  const after = valueCursorParam(query, VALUE_CURSOR);
  await requireOwned(c, webhookId, sessionStart(c.req.header('x-d1-bookmark')));
  const page = await inObject(() => c.env.APPLICATIONS.getByName(c.get('appId')).values(webhookId, after, limit + 1));
  return success(c, { value: valuesPageJson(webhookId, page.values, page.count, limit) });
}
