// A small HTTP/1.1 client over node:http for the `http` project: one keep-alive Agent per test,
// so a test can see which socket each request went over.
import { Agent, request } from 'node:http';
import type { Socket } from 'node:net';
import { SignJWT } from 'jose';
import { inject } from 'vitest';

export const PATH = '/v1.0/app/nft/webhook';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Header names exactly as they came over the wire. */
  rawNames: string[];
  text: string;
  socket: Socket;
}

export type Body = string | Buffer | AsyncIterable<Buffer>;

/** One keep-alive connection at most: every request goes over the same socket while it lives. */
export function connection() {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<Socket>();
  const base = new URL(inject('baseUrl'));

  /** Sends a request; a string or Buffer body gets Content-Length, an iterable is sent chunked. */
  function send(method: string, path: string, headers: Record<string, string> = {}, body?: Body): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = request({ host: base.hostname, port: base.port, method, path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const socket = res.socket as Socket;
          sockets.add(socket);
          resolve({
            status: res.statusCode as number,
            headers: res.headers,
            rawNames: res.rawHeaders.filter((_, i) => i % 2 === 0),
            text: Buffer.concat(chunks).toString('utf8'),
            socket,
          });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      if (body === undefined) req.end();
      else if (typeof body === 'string' || Buffer.isBuffer(body)) req.end(body);
      else
        (async () => {
          for await (const chunk of body) {
            if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
          }
          req.end();
        })().catch(reject);
    });
  }

  return { send, sockets, close: () => agent.destroy() };
}

/**
 * A token for `appId`, signed with the secret the Worker under test verifies with; `scope`: its
 * scope claim (a publisher's is `events:publish`).
 */
export const tokenFor = (appId: string, scope?: string) => tokenWith(inject('secret'), appId, scope);

/** A token for `appId` signed with `secret`: for a Worker a test started itself, with a secret of its own. */
export const tokenWith = (secret: string, appId: string, scope?: string) =>
  new SignJWT({ sub: appId, ...(scope === undefined ? {} : { scope }) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(secret));

/**
 * Parses an answer's JSON with every delivery_id kept as its exact decimal digits (text): ids lie
 * above 2^53, where JSON.parse would round them to another delivery's id.
 */
export const parseIds = (text: string) => JSON.parse(text.replace(/"delivery_id":(\d+)/g, '"delivery_id":"$1"'));

/** `count` chunks of `size` bytes, produced one at a time (a body of unknown length). */
export async function* chunks(count: number, size = 16 * 1024): AsyncIterable<Buffer> {
  for (let i = 0; i < count; i++) yield Buffer.alloc(size, 0x78);
}
