// Live deliveries' WebSockets over real sockets, against wrangler dev: a page refused past the 20
// a webhook may have watching (4429), and the watchers of a webhook deleted (4404), are closed
// cleanly, with nothing uncaught in the Worker's log.
import { readFileSync } from 'node:fs';
import { describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { apiOf } from './api';
import { PATH, tokenFor } from './client';

const base = inject('baseUrl');
const api = apiOf(base, inject('secret'));

/** The Worker's output from `from` (a length of the log) on. */
const logSince = (from: number) => readFileSync(inject('logFile'), 'utf8').slice(from);

/** A watcher of webhook `id`, as the portal opens one: open, and how it closed. */
function watch(id: number, token: string) {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/v1.0/app/nft/webhook/delivery/live?webhook_id=${id}`, [
    'nft-webhook.live',
    `bearer.${token}`,
  ]);
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, closed, opened };
}

describe('live deliveries over real sockets', () => {
  it('the 21st watcher is refused with 4429, and the 20 closed with 4404 once the webhook is deleted: nothing uncaught', async () => {
    const from = readFileSync(inject('logFile'), 'utf8').length;
    const app = `http-live-${Date.now()}`;
    const { id } = await api.register(app, 'https://hooks.example.com/live');
    const token = await tokenFor(app);
    const watchers = [];
    for (let i = 0; i < 20; i++) {
      const w = watch(id, token);
      await w.opened;
      watchers.push(w);
    }
    const refused = watch(id, token);
    expect(await refused.closed).toEqual({ code: 4429, reason: 'too many open pages for this webhook' });
    expect(watchers.every((w) => w.ws.readyState === WebSocket.OPEN)).toBe(true);

    const res = await fetch(`${base}${PATH}?webhook_id=${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await res.json()).toEqual({ return: 0, message: 'success' });
    const closes = await Promise.all(watchers.map((w) => w.closed));
    expect(closes).toEqual(Array(20).fill({ code: 4404, reason: 'this webhook was deleted' }));
    // The Worker's log has had time to say anything it would.
    await new Promise((r) => setTimeout(r, 1000));
    const log = logSince(from);
    expect(log).not.toContain('Uncaught');
    expect(log).not.toContain('Network connection lost');
  });
});
