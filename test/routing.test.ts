import { env, SELF } from 'cloudflare:test';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { faultyDb, holdBookmark, insertWebhook, snapshot } from './helpers/database';
import { expectDeleteFail, expectEnvelope, expectUpdateFail } from './helpers/replies';
import { fetchAndWait, fetchWith, fetchWorker, ORIGIN, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

beforeAll(holdBookmark);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('routing and the envelope', () => {
  it.each([
    '/',
    '/v1.0/app/nft/webhooks',
    '/v1.0/app/nft/webhook/',
    '/v1.0/app/nft/webhook/1',
    '/V1.0/app/nft/webhook',
    '/v1x0/app/nft/webhook',
    '/v2.0/app/nft/webhook',
  ])('answers 404 "not found" for the unknown path %s', async (path) => {
    const res = await SELF.fetch(ORIGIN + path, { method: 'DELETE', headers: bearer(await tokenFor('app-a')) });
    await expectEnvelope(res, 404, 404, 'not found');
  });

  it.each(['OPTIONS', 'TRACE', 'PROPFIND', 'REPORT'])(
    'answers 405 with Allow for %s on the path, before authentication',
    async (method) => {
      const res = await SELF.fetch(URL_, { method });
      await expectEnvelope(res, 405, 405, 'method not allowed');
      expect(res.headers.get('allow')).toBe('DELETE, GET, PATCH, POST, PUT');
    },
  );

  it('answers 405 to HEAD with the envelope headers and no body', async () => {
    const res = await SELF.fetch(URL_, { method: 'HEAD' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('DELETE, GET, PATCH, POST, PUT');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.text()).toBe('');
  });

  it('echoes a sane X-Request-Id and replaces any other', async () => {
    const sane = await SELF.fetch(URL_, { method: 'GET', headers: { 'x-request-id': 'abc-123_x.y:z' } });
    expect(sane.headers.get('x-request-id')).toBe('abc-123_x.y:z');
    for (const bad of ['has space', 'x'.repeat(129), 'quote"s', '<script>']) {
      const res = await SELF.fetch(URL_, { method: 'GET', headers: { 'x-request-id': bad } });
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    const none = await SELF.fetch(URL_, { method: 'GET' });
    expect(none.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('tells the reason of a 4xx in X-Error-Detail, not in the body', async () => {
    const res = await SELF.fetch(`${URL_}?webhook_id=x`, {
      method: 'DELETE',
      headers: bearer(await tokenFor('app-a')),
    });
    expect(res.headers.get('x-error-detail')).toMatch(/webhook_id/);
    await expectDeleteFail(res, 400);
  });

  it('reads an unread body after a rejection, so a keep-alive connection can be reused', async () => {
    const rejected = new Request(URL_, {
      method: 'PUT',
      headers: { authorization: 'Bearer a.b.c', 'content-type': 'application/json' },
      body: JSON.stringify({ webhook_id: 1, is_enabled: true }),
    });
    const deleteWithBody = new Request(`${URL_}?webhook_id=x`, { method: 'DELETE', body: 'ignored' });
    await expectEnvelope(await fetchWith({}, rejected), 401, 20004, 'Invalid jwt token');
    await expectEnvelope(await fetchWith({}, deleteWithBody), 401, 20004, 'Invalid jwt token');
    expect(rejected.bodyUsed).toBe(true);
    expect(deleteWithBody.bodyUsed).toBe(true);
  });

  it.each(['PUT', 'POST', 'DELETE'])(
    'reads an unwanted %s body of 1 MiB to its end instead of cancelling it, keeping none of it',
    async (method) => {
      let sent = 0;
      let cancelled = false;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= 1024 * 1024) return controller.close();
          controller.enqueue(new Uint8Array(16 * 1024));
          sent += 16 * 1024;
        },
        cancel() {
          cancelled = true;
        },
      });
      const req = new Request(`${URL_}?webhook_id=987654321`, {
        method,
        headers: { ...bearer(await tokenFor('app-a')), 'content-type': 'application/json' },
        body,
        duplex: 'half',
      } as RequestInit);
      expect(req.headers.get('content-length')).toBeNull();
      const res = await fetchWith({}, req);
      expect(res.status).toBe(method === 'DELETE' ? 404 : 413);
      expect({ sent, cancelled }).toEqual({ sent: 1024 * 1024, cancelled: false });
    },
  );

  it('turns a storage failure into a logged 500 with the op code, changing nothing', async () => {
    const id = await insertWebhook('app-a');
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const broken = faultyDb([{ before: 'D1_ERROR: simulated failure' }, { before: 'D1_ERROR: simulated failure' }]).db;
    const token = await tokenFor('app-a');
    const before = await snapshot();

    const deleteRes = await fetchWith(
      { DB: broken },
      new Request(`${URL_}?webhook_id=${id}`, {
        method: 'DELETE',
        headers: { ...bearer(token), 'x-request-id': 'req-500' },
      }),
    );
    const putRes = await fetchWith(
      { DB: broken },
      new Request(URL_, {
        method: 'PUT',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ webhook_id: id, is_enabled: false }),
      }),
    );

    expect(deleteRes.headers.get('x-error-detail')).toBeNull();
    expect(putRes.headers.get('x-error-detail')).toBeNull();
    await expectDeleteFail(deleteRes, 500);
    await expectUpdateFail(putRes, 500);
    expect(await snapshot()).toEqual(before);
    const logged = errors.mock.calls.map((args) => String(args[0]));
    expect(logged.some((line) => line.includes('"request_id":"req-500"') && line.includes('simulated failure'))).toBe(
      true,
    );
  });

  it('answers an envelope even when the error handler itself fails', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    // The handler fails (its DB binding throws), then the error handler fails too (making the
    // request id throws once): the Worker's outer guard must still answer the envelope.
    const bindings = { ...env };
    Object.defineProperty(bindings, 'DB', {
      get() {
        throw new Error('binding unavailable');
      },
    });
    const uuid = vi.spyOn(crypto, 'randomUUID').mockImplementationOnce(() => {
      throw new Error('no ids today');
    });
    const res = await fetchWorker(
      new Request(`${URL_}?webhook_id=1`, { method: 'DELETE', headers: bearer(await tokenFor('app-a')) }),
      bindings,
    );
    await expectDeleteFail(res, 500);
    expect(uuid.mock.calls.length).toBeGreaterThan(1);
  });
});

describe('the delivery log, test event and recovery paths', () => {
  it.each([
    ['delivery', 'GET'],
    ['test', 'POST'],
    ['recover', 'POST'],
  ])('/v1.0/app/nft/webhook/%s answers other methods 405 with Allow: %s', async (path, allow) => {
    const res = await fetchAndWait({}, new Request(`${ORIGIN}/v1.0/app/nft/webhook/${path}`, { method: 'PATCH' }));
    expect(res.headers.get('allow')).toBe(allow);
    await expectEnvelope(res, 405, 405, 'method not allowed');
  });
});
