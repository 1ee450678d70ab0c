import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { insertWebhook, snapshot } from './helpers/database';
import { expectDeleteFail, expectUpdateFail } from './helpers/replies';
import { fetchWorker, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const putRequest = (token: string, id: string, requestId: string) =>
  new Request(URL_, {
    method: 'PUT',
    headers: { ...bearer(token), 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify({ webhook_id: id, is_enabled: false }),
  });

/** A 500 envelope with the op code, an error log line with the request id, and nothing changed. */
async function expectLogged500(
  res: Response,
  errors: { mock: { calls: unknown[][] } },
  requestId: string,
  before: unknown,
) {
  await expectUpdateFail(res, 500);
  expect(res.headers.get('x-request-id')).toBe(requestId);
  const lines = errors.mock.calls.map((c) => JSON.parse(String(c[0])) as { level: string; request_id: string });
  expect(lines).toContainEqual(expect.objectContaining({ level: 'error', request_id: requestId }));
  expect(await snapshot()).toEqual(before);
}

describe('unexpected exceptions answer the 500 envelope and are logged', () => {
  it('in the middleware (reading the Authorization header)', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const token = await tokenFor('app-a');
    const before = await snapshot();
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const get = Headers.prototype.get;
    vi.spyOn(Headers.prototype, 'get').mockImplementation(function (this: Headers, name: string) {
      if (name.toLowerCase() === 'authorization') throw new RangeError('headers exploded');
      return get.call(this, name);
    });

    await expectLogged500(await fetchWorker(putRequest(token, id, 'req-mw'), env), errors, 'req-mw', before);
  });

  it('in parsing', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const token = await tokenFor('app-a');
    const before = await snapshot();
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const parse = JSON.parse;
    // Only the Worker's body parsing passes a reviver; D1's client keeps working.
    vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
      if (reviver !== undefined) throw new RangeError('parser exploded');
      return parse(text);
    });

    await expectLogged500(await fetchWorker(putRequest(token, id, 'req-parse'), env), errors, 'req-parse', before);
  });

  it('in configuration', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const token = await tokenFor('app-a');
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const bindings = { ...env };
    Object.defineProperty(bindings, 'JWT_ISSUER', {
      get() {
        throw new TypeError('settings exploded');
      },
    });
    const before = await snapshot();

    await expectLogged500(
      await fetchWorker(putRequest(token, id, 'req-config'), bindings),
      errors,
      'req-config',
      before,
    );
  });

  it('in the store', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const token = await tokenFor('app-a');
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const bindings = {
      ...env,
      DB: { withSession: () => ({ batch: () => Promise.reject(new TypeError('store exploded')) }) },
    };
    const before = await snapshot();

    await expectLogged500(await fetchWorker(putRequest(token, id, 'req-store'), bindings), errors, 'req-store', before);
  });

  it('for DELETE too, with its own code', async () => {
    const id = await insertWebhook('app-a');
    vi.spyOn(console, 'error').mockImplementation(() => {});
    vi.spyOn(URLSearchParams.prototype, 'getAll').mockImplementation(() => {
      throw new RangeError('query parser exploded');
    });
    const res = await fetchWorker(
      new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(await tokenFor('app-a')) }),
      env,
    );
    await expectDeleteFail(res, 500);
  });
});
