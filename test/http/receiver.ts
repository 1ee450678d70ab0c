// A webhook receiver for the `http` project: a node:http server in the test process that records
// every request (raw body bytes, headers, arrival time) by path and answers as the test says.
import { createServer, type IncomingHttpHeaders } from 'node:http';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as it came over the wire. */
  body: Buffer;
  /** Date.now() when the body had arrived. */
  at: number;
  /** Whether the sender closed the connection before the answer was sent. */
  abandoned: boolean;
}

/** How to answer: a status, headers, a body, and how long to wait first. */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
}

/** Answers the `n`th request (from 1) to a path. */
export type Responder = (n: number, request: Received) => Answer;

/** The three Standard Webhooks headers of a request, for `Webhook.verify`. */
export const signedHeaders = (r: Received) => ({
  'webhook-id': String(r.headers['webhook-id'] ?? ''),
  'webhook-timestamp': String(r.headers['webhook-timestamp'] ?? ''),
  'webhook-signature': String(r.headers['webhook-signature'] ?? ''),
});

/** Polls `check` every `intervalMs` until it returns a value other than undefined or false; fails after `timeoutMs`. */
export async function until<T>(
  what: string | (() => string),
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 20_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      throw new Error(`waited ${timeoutMs} ms for ${typeof what === 'string' ? what : what()}`);
    }
    await sleep(intervalMs);
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts a receiver on 127.0.0.1:`port`. Paths without a responder answer 204. */
export async function startReceiver(port: number) {
  const received = new Map<string, Received[]>();
  const responders = new Map<string, Responder>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const request: Received = {
        method: req.method ?? '',
        path,
        headers: req.headers,
        body: Buffer.concat(chunks),
        at: Date.now(),
        abandoned: false,
      };
      const list = received.get(path) ?? [];
      list.push(request);
      received.set(path, list);
      const answer = responders.get(path)?.(list.length, request) ?? { status: 204 };
      res.on('close', () => {
        if (!res.writableFinished) request.abandoned = true;
      });
      const send = () => {
        if (!res.destroyed) res.writeHead(answer.status, answer.headers).end(answer.body);
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`port ${port} is busy: the webhook receiver cannot listen on 127.0.0.1:${port}`)
          : err,
      ),
    );
    server.listen(port, '127.0.0.1', resolve);
  });

  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    /** Answers requests to `path` with `responder`. */
    answer(path: string, responder: Responder) {
      responders.set(path, responder);
    },
    /** The requests to `path` so far. */
    requests: (path: string): Received[] => [...(received.get(path) ?? [])],
    /** Waits until `path` has had `count` requests at least; returns them all. */
    waitFor(path: string, count: number, timeoutMs = 20_000): Promise<Received[]> {
      return until(
        () => `${count} request(s) to ${path} (got ${received.get(path)?.length ?? 0})`,
        () => ((received.get(path)?.length ?? 0) >= count ? [...(received.get(path) ?? [])] : undefined),
        timeoutMs,
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
