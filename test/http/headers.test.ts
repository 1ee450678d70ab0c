// Optional whitespace around a header value (RFC 9110 §5.6.3) over real HTTP. workerd's Headers
// strips it from headers set in code (test/headers.test.ts), but a value that came over the wire
// reaches the Worker with it: only raw bytes on a socket show that.
import { createConnection } from 'node:net';
import { describe, expect, inject, it } from 'vitest';
import { PATH, tokenFor } from './client';

interface RawReply {
  status: number;
  headers: Map<string, string>;
  body: unknown;
}

/** Sends `head` (request line and headers, CRLF-separated, no blank line) and `body` as they are. */
function raw(head: string, body = ''): Promise<RawReply> {
  const base = new URL(inject('baseUrl'));
  const length = Buffer.byteLength(body);
  const text = `${head}\r\nHost: ${base.host}\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n${body}`;
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: base.hostname, port: Number(base.port) }, () => socket.write(text));
    let reply = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (c: Buffer) => {
      reply = Buffer.concat([reply, c]);
      const end = reply.indexOf('\r\n\r\n');
      if (end === -1) return;
      const [statusLine = '', ...lines] = reply.subarray(0, end).toString('latin1').split('\r\n');
      const headers = new Map(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const rest = reply.subarray(end + 4);
      if (rest.length < Number(headers.get('content-length'))) return;
      socket.destroy();
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(rest.toString('utf8')) });
    });
  });
}

describe.each([
  ['a trailing space', 'sp', '', ' '],
  ['a trailing tab', 'tab', '', '\t'],
  ['spaces and tabs around them', 'both', '\t ', ' \t '],
])('header values with %s, over real HTTP', (_, name, lead, trail) => {
  it('accepts a valid token', async () => {
    const token = await tokenFor(`ows-auth-${name}`);
    const created = await raw(
      `POST ${PATH} HTTP/1.1\r\nAuthorization: ${lead}Bearer ${token}${trail}\r\nContent-Type: application/json`,
      JSON.stringify({ url: `https://hooks.example.com/ows-${name}` }),
    );
    expect({ status: created.status, return: (created.body as { return: number }).return }).toEqual({
      status: 201,
      return: 0,
    });
    const id = (created.body as { value: { webhook_id: number } }).value.webhook_id;
    const read = await raw(`GET ${PATH}?webhook_id=${id} HTTP/1.1\r\nAuthorization: Bearer ${token}${trail}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ return: 0, message: 'success', value: { webhook_id: id, is_enabled: true } });
  });

  it('takes an Idempotency-Key with and without it as one key: the same reply, nothing created twice', async () => {
    const token = await tokenFor(`ows-key-${name}`);
    const body = JSON.stringify({ url: 'https://hooks.example.com/ows-key' });
    const send = (key: string) =>
      raw(
        `POST ${PATH} HTTP/1.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nIdempotency-Key: ${key}`,
        body,
      );
    const first = await send(`${lead}ows-key${trail}`);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ return: 0, message: 'success' });
    const again = await send('ows-key');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const list = await raw(`GET ${PATH} HTTP/1.1\r\nAuthorization: Bearer ${token}`);
    expect(list.body).toMatchObject({ return: 0, value: { webhooks: [{ url: 'https://hooks.example.com/ows-key' }] } });
    expect((list.body as { value: { webhooks: unknown[] } }).value.webhooks).toHaveLength(1);
  });

  it('echoes an X-Request-Id without it', async () => {
    const res = await raw(`GET ${PATH} HTTP/1.1\r\nX-Request-Id: ${lead}req-ows-1${trail}`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ return: 20004, message: 'Invalid jwt token' });
    expect(res.headers.get('x-request-id')).toBe('req-ows-1');
  });
});
