import { describe, expect, it } from 'vitest';
import { parseId } from '../src/core/int64';
import { auditRows, insertWebhook, webhookRow } from './helpers/database';
import { expectDeleteFail, expectSuccess, expectUpdateFail } from './helpers/replies';
import { del, put } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

// 2^53 and 2^53 + 1 are the same JavaScript number: only exact handling can tell them apart.
const TWO_53 = '9007199254740992';
const TWO_53_PLUS_1 = '9007199254740993';
const INT64_MAX = '9223372036854775807';

describe('webhook_id as int64', () => {
  it('PUT with a JSON number 2^53+1 changes that row and not its neighbour', async () => {
    await insertWebhook('app-a', { id: TWO_53, enabled: true });
    await insertWebhook('app-a', { id: TWO_53_PLUS_1, enabled: true });

    await expectSuccess(
      await put(`{"webhook_id": ${TWO_53_PLUS_1}, "is_enabled": false}`, bearer(await tokenFor('app-a'))),
    );

    expect((await webhookRow(TWO_53_PLUS_1))?.is_enabled).toBe(0);
    expect((await webhookRow(TWO_53))?.is_enabled).toBe(1);
    expect(await auditRows(TWO_53)).toEqual([]);
    const [record] = await auditRows(TWO_53_PLUS_1);
    // The audit JSON keeps the id exactly too.
    expect(record?.row_before).toContain(`"webhook_id":${TWO_53_PLUS_1}`);
  });

  it('PUT with a decimal string 2^53+1 changes that row and not its neighbour', async () => {
    await insertWebhook('app-a', { id: '9007199254740995', enabled: true });
    await insertWebhook('app-a', { id: '9007199254740996', enabled: true });

    await expectSuccess(
      await put({ webhook_id: '9007199254740995', is_enabled: false }, bearer(await tokenFor('app-a'))),
    );

    expect((await webhookRow('9007199254740995'))?.is_enabled).toBe(0);
    expect((await webhookRow('9007199254740996'))?.is_enabled).toBe(1);
  });

  it('DELETE of 2^53+1 deletes that row and not its neighbour', async () => {
    await insertWebhook('app-b', { id: '9007199254741000' });
    await insertWebhook('app-b', { id: '9007199254741001' });

    await expectSuccess(await del('webhook_id=9007199254741001', bearer(await tokenFor('app-b'))));

    expect(await webhookRow('9007199254741001')).toBeNull();
    expect(await webhookRow('9007199254741000')).not.toBeNull();
    expect((await auditRows('9007199254741001'))[0]?.row_before).toContain('"webhook_id":9007199254741001');
  });

  it('addresses the largest id, 2^63-1, by query, JSON number and string', async () => {
    await insertWebhook('app-a', { id: INT64_MAX, enabled: true });
    const token = await tokenFor('app-a');

    await expectSuccess(await put(`{"webhook_id": ${INT64_MAX}, "is_enabled": false}`, bearer(token)));
    expect((await webhookRow(INT64_MAX))?.is_enabled).toBe(0);
    await expectSuccess(await put({ webhook_id: INT64_MAX, is_enabled: true }, bearer(token)));
    expect((await webhookRow(INT64_MAX))?.is_enabled).toBe(1);
    await expectSuccess(await del(`webhook_id=${INT64_MAX}`, bearer(token)));
    expect(await webhookRow(INT64_MAX)).toBeNull();
  });

  it('rejects 2^63 in every form with 400', async () => {
    const token = await tokenFor('app-a');
    await expectDeleteFail(await del('webhook_id=9223372036854775808', bearer(token)), 400);
    await expectUpdateFail(await put('{"webhook_id": 9223372036854775808, "is_enabled": true}', bearer(token)), 400);
    await expectUpdateFail(await put({ webhook_id: '9223372036854775808', is_enabled: true }, bearer(token)), 400);
  });
});

describe('parseId', () => {
  it.each([
    ['1', '1'],
    ['007', '7'],
    [TWO_53_PLUS_1, TWO_53_PLUS_1],
    [INT64_MAX, INT64_MAX],
    [`000${INT64_MAX}`, INT64_MAX],
  ])('reads %s as %s', (text, id) => {
    expect(parseId(text)).toBe(id);
  });

  it.each([
    '',
    '0',
    '000',
    '-1',
    '+1',
    '1.0',
    '1e3',
    '0x1',
    ' 1',
    '1 ',
    '١',
    '9223372036854775808',
    '99999999999999999999',
    '1'.padStart(65, '0'),
  ])('refuses %j', (text) => {
    expect(parseId(text)).toBeNull();
  });
});
