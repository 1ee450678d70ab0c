import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Body, chunks, connection, PATH, type Reply, tokenFor } from './client';

let conn: ReturnType<typeof connection>;
afterEach(() => conn?.close());

const MIB = Buffer.alloc(1024 * 1024, 0x78);
let token: string;
let webhookId: string;

beforeAll(async () => {
  token = await tokenFor('http-connections');
  const c = connection();
  const res = await c.send(
    'POST',
    PATH,
    { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    JSON.stringify({ url: 'https://hooks.example.com/connections' }),
  );
  c.close();
  expect(res.status).toBe(201);
  webhookId = String(JSON.parse(res.text).value.webhook_id);
});

const json = () => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

/** The valid request that must succeed after each rejection, on the same connection. */
async function validPut(enabled: boolean) {
  const res = await conn.send('PUT', PATH, json(), JSON.stringify({ webhook_id: webhookId, is_enabled: enabled }));
  expect({ status: res.status, text: res.text }).toEqual({ status: 200, text: '{"return":0,"message":"success"}' });
  return res;
}

const envelopeOf = (res: Reply) => JSON.parse(res.text) as { return: number; message: string };

describe('one keep-alive connection over real HTTP (wrangler dev)', () => {
  const rejections: [string, () => [string, string, Record<string, string>, Body?], number, number][] = [
    ['a PUT body declared 1 MiB (Content-Length)', () => ['PUT', PATH, json(), MIB], 413, 64062],
    ['a PUT body streamed past 1 MiB (chunked)', () => ['PUT', PATH, json(), chunks(64)], 413, 64062],
    ['a POST body declared 1 MiB', () => ['POST', PATH, json(), MIB], 413, 64061],
    ['a POST body streamed past 1 MiB', () => ['POST', PATH, json(), chunks(64)], 413, 64061],
    // Not here: a GET or DELETE with a body, declared or chunked. The local runtime (wrangler dev,
    // and a bare Miniflare worker alike) hands the Worker an empty body for it (Content-Length: 0)
    // and leaves the bytes on the connection, where they break the next request (501 or 431, plain
    // text) before any Worker runs; see docs/failures.md. The Worker's own part, draining a body
    // nobody reads to its end, is tested in workerd (routing.test.ts).
    [
      'a bad token with a body',
      () => ['PUT', PATH, { authorization: 'Bearer a.b.c', 'content-type': 'application/json' }, MIB],
      401,
      20004,
    ],
    ['invalid JSON', () => ['PUT', PATH, json(), '{"webhook_id": '], 400, 64062],
    ['a body that is not JSON', () => ['POST', PATH, { ...json(), 'content-type': 'text/plain' }, MIB], 415, 64061],
    ['a refused URL', () => ['POST', PATH, json(), '{"url":"https://127.0.0.1/"}'], 400, 64061],
    ['a malformed bookmark', () => ['GET', PATH, { ...json(), 'x-d1-bookmark': 'first-primary' }], 400, 64060],
    ['an unknown path with a body', () => ['PUT', `${PATH}/x`, json(), MIB], 404, 404],
    ['a method not allowed, with a body', () => ['PATCH', `${PATH}/secret`, json(), MIB], 405, 405],
  ];

  it.each(rejections)('is reused after %s', async (_, make, status, code) => {
    conn = connection();
    await validPut(false);
    const [method, path, headers, body] = make();
    const rejected = await conn.send(method, path, headers, body);
    expect(rejected.status).toBe(status);
    expect(envelopeOf(rejected).return).toBe(code);
    await validPut(true);
    await validPut(false);
    expect(conn.sockets.size).toBe(1);
  });

  it('carries every rejection in a row, then valid requests, on one socket', async () => {
    conn = connection();
    for (const [, make, status] of rejections) {
      const [method, path, headers, body] = make();
      expect((await conn.send(method, path, headers, body)).status).toBe(status);
      await validPut(true);
    }
    expect(conn.sockets.size).toBe(1);
  });

  it('accepts request headers in any case', async () => {
    conn = connection();
    const created = await conn.send(
      'POST',
      PATH,
      { AUTHORIZATION: `bearer ${token}`, 'CoNtEnT-TyPe': 'Application/JSON', 'IDEMPOTENCY-KEY': 'casing' },
      JSON.stringify({ url: 'https://hooks.example.com/casing' }),
    );
    expect(created.status).toBe(201);
    const again = await conn.send(
      'POST',
      PATH,
      { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'casing' },
      JSON.stringify({ url: 'https://hooks.example.com/casing' }),
    );
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const bookmark = created.headers['x-d1-bookmark'] as string;
    const read = await conn.send('GET', `${PATH}?webhook_id=${JSON.parse(created.text).value.webhook_id}`, {
      Authorization: `Bearer ${token}`,
      'X-D1-BOOKMARK': bookmark,
    });
    expect(read.status).toBe(200);
  });

  it('sends each response header once, whatever its case, with the values a client reads', async () => {
    conn = connection();
    const res = await conn.send('POST', PATH, json(), JSON.stringify({ url: 'https://hooks.example.com/headers' }));
    expect(res.status).toBe(201);
    const names = res.rawNames.map((n) => n.toLowerCase());
    expect(new Set(names).size).toBe(names.length);
    for (const name of ['content-type', 'cache-control', 'x-request-id', 'location', 'x-d1-bookmark']) {
      expect(names).toContain(name);
    }
    expect(res.headers['content-type']).toBe('application/json');
    const limited = await conn.send('GET', PATH, { authorization: 'Bearer nope' });
    expect(limited.headers['www-authenticate']).toMatch(/^Bearer realm="nft-webhook"/);
    const other = await conn.send('OPTIONS', PATH);
    expect(other.headers.allow).toBe('DELETE, GET, PATCH, POST, PUT');
  });

  it('answers an envelope for a platform-level path too: no plain text anywhere', async () => {
    conn = connection();
    for (const path of ['/', '/favicon.ico', `${PATH}?${'x'.repeat(4000)}`]) {
      const res = await conn.send('GET', path);
      expect(res.headers['content-type']).toBe('application/json');
      expect(envelopeOf(res)).toHaveProperty('return');
    }
  });
});
