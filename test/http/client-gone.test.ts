// A client that goes away in the middle of its request body, over a real socket: the Worker logs
// it as such (info), not as a failure of its own (a 500 with an error line).
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { PATH, tokenFor } from './client';

let token: string;
beforeAll(async () => {
  token = await tokenFor('http-client-gone');
});

/** The Worker's JSON log lines so far (wrangler dev's output holds other lines too). */
const logLines = () =>
  readFileSync(inject('logFile'), 'utf8')
    .split('\n')
    .filter((line) => line.includes('{"level":'))
    .map((line) => line.slice(line.indexOf('{"level":'), line.lastIndexOf('}') + 1))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });

/**
 * Sends a request's head and the start of its body (declared 4,000 bytes long, or chunked), then
 * closes the socket.
 */
function leaveMidBody(method: string, path: string, requestId: string, chunked: boolean) {
  const base = new URL(inject('baseUrl'));
  return new Promise<void>((resolve, reject) => {
    const socket = connect(Number(base.port), base.hostname, () => {
      const head = [
        `${method} ${path} HTTP/1.1`,
        `Host: ${base.host}`,
        `Authorization: Bearer ${token}`,
        'Content-Type: application/json',
        `X-Request-Id: ${requestId}`,
        chunked ? 'Transfer-Encoding: chunked' : 'Content-Length: 4000',
        '',
        '',
      ].join('\r\n');
      const part = '{"url":"https://hooks.example.com/gone","description":"';
      socket.write(head + (chunked ? `${part.length.toString(16)}\r\n${part}\r\n` : part));
      // Long enough for the Worker to have begun reading the body.
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, 500);
    });
    socket.on('error', reject);
  });
}

/** The Worker's log lines of one request, once it has written them. */
async function linesOf(requestId: string) {
  let mine: Record<string, unknown>[] = [];
  for (let i = 0; i < 50 && mine.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 200));
    mine = logLines().filter((l) => l.request_id === requestId);
  }
  return mine;
}

const GONE = 'client went away before sending its whole body';

describe('a client that goes away mid-body (wrangler dev)', () => {
  it.each([
    ['POST', 'create'],
    ['PATCH', 'patch'],
  ])('is logged at info as gone (499), never as a 500 or an error line (%s, Content-Length)', async (method, op) => {
    const requestId = `gone-${method}-${Date.now()}`;
    await leaveMidBody(method, PATH, requestId, false);
    // One line, the request's, at info: the client went away.
    expect(await linesOf(requestId)).toEqual([
      expect.objectContaining({ level: 'info', msg: 'request', method, op, status: 499, detail: GONE }),
    ]);
  });

  it('is never a 500 or an error line with a chunked body either', async () => {
    const requestId = `gone-chunked-${Date.now()}`;
    await leaveMidBody('POST', PATH, requestId, true);
    const lines = await linesOf(requestId);
    expect(lines).toEqual([expect.objectContaining({ level: 'info', msg: 'request', method: 'POST' })]);
    // The local runtime sometimes ends a cut chunked body as if it were whole: the Worker then
    // reads what arrived, which is not JSON.
    expect([
      { status: 499, detail: GONE },
      { status: 400, detail: 'body is not valid JSON' },
    ]).toContainEqual({ status: lines[0]?.status, detail: lines[0]?.detail });
  });
});
