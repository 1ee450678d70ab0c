// The receiving end of deliveries: the runtime's fetch replaced by a spy.
import { vi } from 'vitest';

/** What a receiver saw of one request. */
export interface Received {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  redirect: string | undefined;
}

/**
 * Replaces the runtime's fetch (what the consumer calls) with `reply`, and keeps every request.
 * `reply` may return a Response, a promise of one, or throw.
 */
export function receiver(reply: (req: Received, n: number) => Response | Promise<Response> = () => new Response('ok')) {
  const requests: Received[] = [];
  const spy = vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const req = new Request(input as RequestInfo, init as RequestInit);
    const received: Received = {
      url: req.url,
      method: req.method,
      headers: Object.fromEntries(req.headers),
      body: await req.text(),
      redirect: (init as RequestInit | undefined)?.redirect,
    };
    requests.push(received);
    return reply(received, requests.length);
  });
  return { requests, spy };
}
