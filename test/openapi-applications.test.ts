// The application operations (GET, PUT and DELETE /v1.0/platform/nft/application), checked
// against docs/openapi.json with real replies, status by status.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { APPLICATION_PATH } from '../src/applications/routes';
import { adminHeaders, applicationRequest, appQuery } from './helpers/applications';
import {
  broken,
  expectEachDocumented,
  expectOtherMethodsRefused,
  expectSchemaAgrees,
  overloaded,
  publishLimited,
} from './helpers/openapi';
import { fetchAndWait, fetchWith, registerWebhook } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** The application's object fails. */
const objectDown = {
  APPLICATIONS: { getByName: () => ({ setRetention: () => Promise.reject(new Error('object unavailable')) }) },
};

const readOnly = async () => bearer(await tokenFor('platform-admin', { scope: 'webhooks:read' }));

describe('docs/openapi.json: the application operations', () => {
  it('documents every reply of GET', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const admin = await adminHeaders();
    const get = (headers: Record<string, string>, query = appQuery('oa-app-get')) =>
      applicationRequest('GET', headers, { query });
    const values = await expectEachDocumented(
      'get',
      APPLICATION_PATH,
      [
        ['200', () => fetchWith({}, get(admin))],
        ['400', () => fetchWith({}, get(admin, 'app_id='))],
        ['401', () => fetchWith({}, get({}))],
        ['403', async () => fetchWith({}, get(await readOnly()))],
        ['429', () => fetchWith(publishLimited, get(admin))],
        ['500', () => fetchWith({ DB: broken() }, get(admin))],
        ['503', () => fetchWith({ DB: overloaded() }, get(admin))],
      ],
      ['200', '500', '503'],
    );
    expect(values.get('200')).toEqual({ app_id: 'oa-app-get', retention_days: 30, default: true, erased: false });
  });

  it('documents every reply of PUT, and its request schema agrees with the Worker', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const admin = await adminHeaders();
    const body = { app_id: 'oa-app-put', retention_days: 60 };
    const put = (headers: Record<string, string>, sent: unknown = body) =>
      applicationRequest('PUT', headers, { body: sent });
    await expectEachDocumented(
      'put',
      APPLICATION_PATH,
      [
        ['200', () => fetchWith({}, put(admin))],
        ['400', () => fetchWith({}, put(admin, { app_id: 'oa-app-put', retention_days: 0 }))],
        ['401', () => fetchWith({}, put({}))],
        ['403', async () => fetchWith({}, put(await readOnly()))],
        ['413', () => fetchWith({}, put(admin, { ...body, pad: 'x'.repeat(9000) }))],
        ['415', () => fetchWith({}, new Request(put(admin), { headers: { ...admin, 'content-type': 'text/plain' } }))],
        ['429', () => fetchWith(publishLimited, put(admin))],
        ['500', () => fetchWith({ DB: broken() }, put(admin))],
        ['503', () => fetchWith({ DB: overloaded() }, put(admin))],
        ['503 object', () => fetchWith(objectDown, put(admin))],
      ],
      ['200', '500', '503'],
    );
    await expectSchemaAgrees('PUT', APPLICATION_PATH, await tokenFor('platform-admin', { scope: 'platform:admin' }), [
      '{"app_id":"oa-app-s","retention_days":1}',
      '{"app_id":"oa-app-s","retention_days":400,"other":true}',
      '{"app_id":"oa-app-s","retention_days":401}',
      '{"app_id":"oa-app-s","retention_days":0}',
      '{"app_id":"oa-app-s","retention_days":"9"}',
      '{"app_id":"","retention_days":9}',
      '{"retention_days":9}',
      '{"app_id":"oa-app-s"}',
    ]);
  });

  it('documents every reply of DELETE, and 405 for other methods', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const admin = await adminHeaders();
    await registerWebhook('oa-app-del');
    const del = (headers: Record<string, string>, query = appQuery('oa-app-del')) =>
      applicationRequest('DELETE', headers, { query });
    await expectEachDocumented(
      'delete',
      APPLICATION_PATH,
      [
        ['202', () => fetchAndWait({}, del(admin))],
        ['400', () => fetchWith({}, del(admin, ''))],
        ['401', () => fetchWith({}, del({}))],
        ['403', async () => fetchWith({}, del(await readOnly()))],
        ['429', () => fetchWith(publishLimited, del(admin))],
        ['500', () => fetchWith({ DB: broken() }, del(admin))],
        ['503', () => fetchWith({ DB: overloaded() }, del(admin))],
      ],
      ['202', '500', '503'],
    );
    await expectOtherMethodsRefused(
      APPLICATION_PATH,
      `?${appQuery('oa-app-del')}`,
      ['POST', 'PATCH', 'HEAD'],
      await tokenFor('platform-admin', { scope: 'platform:admin' }),
    );
  });
});
