import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { auditRows, countingDb, insertWebhook, snapshot, webhookRow } from './helpers/database';
import { expectDeleteFail, expectSuccess } from './helpers/replies';
import { del, fetchWith, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

describe('DELETE /v1.0/app/nft/webhook', () => {
  it('deletes the caller’s webhook and keeps its last row in the audit table', async () => {
    const id = await insertWebhook('app-a', { enabled: false });
    const before = await webhookRow(id);
    const token = await tokenFor('app-a', { jti: 'token-1' });

    const res = await del(`webhook_id=${id}`, { ...bearer(token), 'x-request-id': 'req-delete-1' });

    await expectSuccess(res);
    expect(res.headers.get('x-request-id')).toBe('req-delete-1');
    expect(await webhookRow(id)).toBeNull();
    const audit = await auditRows(id);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      webhook_id: id,
      app_id: 'app-a',
      action: 'delete',
      actor: 'app-a',
      actor_jti: 'token-1',
      request_id: 'req-delete-1',
    });
    expect(JSON.parse(audit[0]!.row_before)).toEqual({
      ...before,
      webhook_id: Number(id),
      filter: null,
      ordering: null,
      disabled_reason: null,
      disabled_at: null,
      destination: null,
      headers: null,
    });
  });

  it('answers success again when the owner deletes it twice, with one audit record', async () => {
    const id = await insertWebhook('app-a');
    const token = await tokenFor('app-a');

    await expectSuccess(await del(`webhook_id=${id}`, bearer(token)));
    await expectSuccess(await del(`webhook_id=${id}`, bearer(token)));

    expect(await auditRows(id)).toHaveLength(1);
  });

  it('deletes once when many DELETEs of one webhook race: all succeed, one audit record', async () => {
    const id = await insertWebhook('app-a');
    const token = await tokenFor('app-a');

    const replies = await Promise.all(Array.from({ length: 10 }, () => del(`webhook_id=${id}`, bearer(token))));

    for (const res of replies) await expectSuccess(res);
    expect(await webhookRow(id)).toBeNull();
    expect(await auditRows(id)).toHaveLength(1);
  });

  it('answers 404 for another application’s webhook and leaves it as it was', async () => {
    const id = await insertWebhook('app-b');
    const before = await snapshot();

    await expectDeleteFail(await del(`webhook_id=${id}`, bearer(await tokenFor('app-a'))), 404);

    expect(await snapshot()).toEqual(before);
  });

  it('answers a foreign webhook exactly like a missing one', async () => {
    const foreign = await insertWebhook('app-b');
    const token = await tokenFor('app-a');
    const a = await del(`webhook_id=${foreign}`, bearer(token));
    const b = await del('webhook_id=987654321', bearer(token));

    expect([a.status, await a.text()]).toEqual([b.status, await b.text()]);
    expect([...a.headers.keys()].sort()).toEqual([...b.headers.keys()].sort());
  });

  it('answers 404 to another application for a webhook its owner deleted', async () => {
    const id = await insertWebhook('app-b');
    await expectSuccess(await del(`webhook_id=${id}`, bearer(await tokenFor('app-b'))));

    await expectDeleteFail(await del(`webhook_id=${id}`, bearer(await tokenFor('app-a'))), 404);
    expect(await auditRows(id)).toHaveLength(1);
  });

  it('answers 404 for an id that never existed', async () => {
    await expectDeleteFail(await del('webhook_id=424242', bearer(await tokenFor('app-a'))), 404);
  });

  it('answers 404 after a deleted id was reused by a row inserted by hand for another application', async () => {
    const id = await insertWebhook('app-a');
    await expectSuccess(await del(`webhook_id=${id}`, bearer(await tokenFor('app-a'))));
    await insertWebhook('app-b', { id });

    await expectDeleteFail(await del(`webhook_id=${id}`, bearer(await tokenFor('app-a'))), 404);
    expect((await webhookRow(id))?.app_id).toBe('app-b');
  });

  it.each([
    ['missing', null],
    ['missing (other parameters only)', 'id=5'],
    ['empty', 'webhook_id='],
    ['repeated', 'webhook_id=5&webhook_id=5'],
    ['negative', 'webhook_id=-5'],
    ['plus sign', 'webhook_id=%2B5'],
    ['zero', 'webhook_id=0'],
    ['fraction', 'webhook_id=5.0'],
    ['exponent', 'webhook_id=5e2'],
    ['hex', 'webhook_id=0x10'],
    ['leading space', 'webhook_id=%205'],
    ['trailing space', 'webhook_id=5+'],
    ['letters', 'webhook_id=abc'],
    ['2^63', 'webhook_id=9223372036854775808'],
    ['far out of range', `webhook_id=${'9'.repeat(40)}`],
    ['unicode digits', 'webhook_id=%D9%A5'],
    ['wrong case name', 'Webhook_ID=5'],
  ])('answers 400 for a %s webhook_id and changes nothing', async (_, query) => {
    const id = await insertWebhook('app-a');
    const before = await snapshot();

    await expectDeleteFail(
      await del(query === null ? null : query.replace('5', id), bearer(await tokenFor('app-a'))),
      400,
    );

    expect(await snapshot()).toEqual(before);
  });

  it('accepts leading zeros as the same decimal number', async () => {
    const id = await insertWebhook('app-a');
    await expectSuccess(await del(`webhook_id=000${id}`, bearer(await tokenFor('app-a'))));
    expect(await webhookRow(id)).toBeNull();
  });

  it('ignores other query parameters and a body', async () => {
    const id = await insertWebhook('app-a');
    const res = await SELF.fetch(`${URL_}?foo=1&webhook_id=${id}&bar`, {
      method: 'DELETE',
      headers: bearer(await tokenFor('app-a')),
      body: 'ignored',
    });
    await expectSuccess(res);
    expect(await webhookRow(id)).toBeNull();
  });

  it('uses one D1 round trip for a delete, a repeat and a miss', async () => {
    const id = await insertWebhook('app-a');
    const token = await tokenFor('app-a');
    for (const query of [`webhook_id=${id}`, `webhook_id=${id}`, 'webhook_id=777777']) {
      const { db, calls } = countingDb(env.DB);
      await fetchWith({ DB: db }, new Request(`${URL_}?${query}`, { method: 'DELETE', headers: bearer(token) }));
      expect(calls()).toBe(1);
    }
  });
});
