// Live deliveries (src/deliveries/live.ts): GET /v1.0/app/nft/webhook/delivery/live upgrades to a
// WebSocket on the webhook's endpoint object once the token (in the `bearer.<token>` subprotocol
// or the Authorization header) and the webhook's owner are checked; the object tells its watchers
// of each delivery handed over and each attempt recorded, also after it was evicted with the
// sockets hibernated, and refuses a 21st watcher with close code 4429. Once the webhook is deleted,
// or its application erased, every watcher is closed with 4404 (and one that comes late too).
import { evictDurableObject, runInDurableObject, SELF } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LIVE_PATH } from '../src/deliveries/routes';
import { adminHeaders, appQuery, callApplication } from './helpers/applications';
import { endpointOf, endpointSql, storedAttempts, storedDelivery } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectEnvelope, expectInvalidToken, expectQueryFail, expectSuccess, expectValue } from './helpers/replies';
import { del, ORIGIN, postJson, publishEvent, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

const PROTOCOL = 'nft-webhook.live';

/** The webhooks a test made: their objects stop sending, and their watchers close, when it ends. */
const used = new Set<string>();
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.close(1000, 'done');
  for (const id of used) await runInDurableObject(endpointOf(id), (_, state) => state.storage.deleteAlarm());
  used.clear();
  vi.restoreAllMocks();
});

async function register(app: string) {
  const hook = await registerWebhook(app);
  used.add(hook.id);
  return hook.id;
}

/** The upgrade request a browser sends for `webhookId`, its token in the subprotocol. */
const upgrade = (webhookId: string, headers: Record<string, string>) =>
  SELF.fetch(`${ORIGIN}${LIVE_PATH}?webhook_id=${webhookId}`, { headers: { upgrade: 'websocket', ...headers } });

const protocols = (token: string) => ({ 'sec-websocket-protocol': `${PROTOCOL}, bearer.${token}` });

/** A watcher's socket, open, with what it receives and how it closed. */
async function watch(webhookId: string, token: string) {
  const res = await upgrade(webhookId, protocols(token));
  expect(res.status).toBe(101);
  const ws = res.webSocket as WebSocket;
  const messages: string[] = [];
  const closed: { code: number; reason: string }[] = [];
  ws.addEventListener('message', (e) => {
    messages.push(String(e.data));
  });
  ws.addEventListener('close', (e) => {
    closed.push({ code: e.code, reason: e.reason });
  });
  ws.accept();
  sockets.push(ws);
  return { res, ws, messages, closed };
}

async function until<T>(what: string, check: () => T | undefined | false, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`waited for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The endpoint's sockets still open (a refused one is closing). */
const openWatchers = (webhookId: string) =>
  runInDurableObject(
    endpointOf(webhookId),
    (_, state) => state.getWebSockets().filter((ws) => ws.readyState === WebSocket.OPEN).length,
  );

const parsed = (messages: string[]) =>
  messages.filter((m) => m !== 'pong').map((m) => JSON.parse(m) as { change: string; delivery_ids: number[] });

describe('live deliveries: the upgrade', () => {
  it('without a token, or with a bad one, is refused 401 before any upgrade', async () => {
    const app = freshApp();
    const id = await register(app);
    const none = await upgrade(id, {});
    expect(none.headers.get('x-error-detail')).toBe('missing bearer token');
    await expectInvalidToken(none);
    const bad = await upgrade(id, { 'sec-websocket-protocol': `${PROTOCOL}, bearer.a.b.c` });
    expect(bad.headers.get('x-error-detail')).toBe('token invalid');
    expect(bad.webSocket).toBeNull();
    await expectInvalidToken(bad);
    // The subprotocol without its bearer entry carries no token.
    await expectInvalidToken(await upgrade(id, { 'sec-websocket-protocol': PROTOCOL }));
    expect(await runInDurableObject(endpointOf(id), (_, state) => state.getWebSockets().length)).toBe(0);
  });

  it("is 404 for another application's webhook and for a missing one, 400 without webhook_id", async () => {
    const id = await register(freshApp());
    const other = await tokenFor(freshApp());
    const foreign = await upgrade(id, protocols(other));
    expect(foreign.webSocket).toBeNull();
    await expectQueryFail(foreign, 404);
    await expectQueryFail(await upgrade('999999999', protocols(other)), 404);
    const res = await SELF.fetch(`${ORIGIN}${LIVE_PATH}`, { headers: { upgrade: 'websocket', ...protocols(other) } });
    await expectQueryFail(res, 400);
    expect(await runInDurableObject(endpointOf(id), (_, state) => state.getWebSockets().length)).toBe(0);
  });

  it('without Upgrade: websocket is 426', async () => {
    const app = freshApp();
    const id = await register(app);
    const res = await SELF.fetch(`${ORIGIN}${LIVE_PATH}?webhook_id=${id}`, {
      headers: { authorization: `Bearer ${await tokenFor(app)}` },
    });
    expect(res.headers.get('upgrade')).toBe('websocket');
    await expectQueryFail(res, 426);
  });

  it('answers the live subprotocol, never the token; a read-only token and the Authorization header may watch', async () => {
    const app = freshApp();
    const id = await register(app);
    const token = await tokenFor(app);
    const { res } = await watch(id, token);
    expect(res.headers.get('sec-websocket-protocol')).toBe(PROTOCOL);
    expect([...res.headers].map(([, v]) => v).join(' ')).not.toContain(token);
    const readOnly = await watch(id, await tokenFor(app, { scope: 'webhooks:read' }));
    expect(readOnly.res.status).toBe(101);
    const header = await SELF.fetch(`${ORIGIN}${LIVE_PATH}?webhook_id=${id}`, {
      headers: { upgrade: 'websocket', authorization: `Bearer ${token}` },
    });
    expect(header.status).toBe(101);
    expect(header.headers.get('sec-websocket-protocol')).toBeNull();
    (header.webSocket as WebSocket).accept();
    sockets.push(header.webSocket as WebSocket);
    const count = await runInDurableObject(endpointOf(id), (_, state) => state.getWebSockets().length);
    expect(count).toBe(3);
    // Watching sets no alarm: nothing wakes the object for its watchers.
    expect(await runInDurableObject(endpointOf(id), (_, state) => state.storage.getAlarm())).toBeNull();
  });

  it('accepts 20 watchers of a webhook; the 21st is closed with 4429, and may come once one has left', async () => {
    const app = freshApp();
    const id = await register(app);
    const token = await tokenFor(app);
    const open: Awaited<ReturnType<typeof watch>>[] = [];
    for (let i = 0; i < 20; i++) open.push(await watch(id, token));
    const refused = await watch(id, token);
    const [close] = await until('the close', () => refused.closed.length > 0 && refused.closed);
    expect(close).toEqual({ code: 4429, reason: 'too many open pages for this webhook' });
    expect(open.every((w) => w.closed.length === 0)).toBe(true);
    expect(await openWatchers(id)).toBe(20);
    // One page leaves: a new one is accepted.
    open[0]?.ws.close(1000, 'left');
    await until('the close answered', () => open[0]?.closed.length === 1);
    const next = await watch(id, token);
    await new Promise((r) => setTimeout(r, 200));
    expect(next.closed).toEqual([]);
    expect(await openWatchers(id)).toBe(20);
  });
});

describe('live deliveries: what the object tells', () => {
  it('a delivery handed over, then its attempt recorded: one message each, with its id', async () => {
    const app = freshApp();
    const id = await register(app);
    const { requests } = receiver(() => new Response('ok'));
    const watcher = await watch(id, await tokenFor(app));
    const { deliveryIds } = await publishEvent(app);
    expect(deliveryIds.length).toBe(1);
    const deliveryId = deliveryIds[0] as string;
    const messages = await until('two messages', () => {
      const m = parsed(watcher.messages);
      return m.length >= 2 && m;
    });
    // Ids as JSON integers, exact: compared as text.
    expect(watcher.messages.filter((m) => m !== 'pong').slice(0, 2)).toEqual([
      `{"change":"created","delivery_ids":[${deliveryId}]}`,
      `{"change":"recorded","delivery_ids":[${deliveryId}]}`,
    ]);
    expect(messages[1]?.change).toBe('recorded');
    expect(requests.length).toBe(1);
    expect((await storedAttempts(id, deliveryId)).length).toBe(1);
    expect((await storedDelivery(id, deliveryId))?.status).toBe('succeeded');
  });

  it('hibernation: the object evicted, its sockets stay open; a ping is answered, a delivery is still told', async () => {
    const app = freshApp();
    const id = await register(app);
    receiver(() => new Response(null, { status: 500 }));
    const watcher = await watch(id, await tokenFor(app));
    await evictDurableObject(endpointOf(id));
    watcher.ws.send('ping');
    await until('pong', () => watcher.messages.includes('pong'));
    const { deliveryIds } = await publishEvent(app);
    const deliveryId = deliveryIds[0] as string;
    await until('the created and recorded messages', () => parsed(watcher.messages).length >= 2);
    expect(parsed(watcher.messages).slice(0, 2)).toEqual([
      { change: 'created', delivery_ids: [Number(deliveryId)] },
      { change: 'recorded', delivery_ids: [Number(deliveryId)] },
    ]);
    expect(watcher.closed).toEqual([]);
    const stored = await storedDelivery(id, deliveryId);
    expect(stored).toMatchObject({ status: 'pending', attempts: 1, last_status: 500 });
  });

  it('a recovery tells which deliveries are pending again', async () => {
    const app = freshApp();
    const id = await register(app);
    receiver(() => new Response(null, { status: 500 }));
    const token = await tokenFor(app);
    const watcher = await watch(id, token);
    const { deliveryIds } = await publishEvent(app);
    const deliveryId = deliveryIds[0] as string;
    await until('the created and recorded messages', () => parsed(watcher.messages).length >= 2);
    // Its retries run out (as if): failed, then recovered.
    await runInDurableObject(endpointOf(id), (_, state) => state.storage.deleteAlarm());
    await endpointSql(id, `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL`);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const { res } = await postJson('recover', { webhook_id: id, since }, bearer(token));
    expect((await expectValue<{ deliveries: number }>(res, 202)).value).toEqual({ deliveries: 1 });
    await until('the recovery message', () => parsed(watcher.messages).length >= 3);
    expect(watcher.messages.filter((m) => m !== 'pong')[2]).toBe(
      `{"change":"recorded","delivery_ids":[${deliveryId}]}`,
    );
    // Attempted again at once (and told), while the receiver still answers.
    await until('the attempt after the recovery', () => parsed(watcher.messages).length >= 4);
    expect(await storedDelivery(id, deliveryId)).toMatchObject({ status: 'pending', attempts: 2 });
  });

  it("another webhook's watchers hear nothing of it", async () => {
    const app = freshApp();
    const otherApp = freshApp();
    const first = await register(app);
    const second = await register(otherApp);
    receiver(() => new Response('ok'));
    const watcher = await watch(first, await tokenFor(app));
    const elsewhere = await watch(second, await tokenFor(otherApp));
    const { deliveryIds } = await publishEvent(app);
    await until('the messages', () => parsed(watcher.messages).length >= 2);
    expect(parsed(watcher.messages).flatMap((m) => m.delivery_ids)).toEqual(
      deliveryIds.flatMap((d) => [Number(d), Number(d)]),
    );
    expect(elsewhere.messages).toEqual([]);
  });
});

describe('live deliveries: the webhook gone', () => {
  const GONE = { code: 4404, reason: 'this webhook was deleted' };

  it.each([
    ['never had a delivery', false],
    ['had deliveries', true],
  ])('DELETE of a webhook that %s closes its watchers with 4404; ping is no longer answered', async (_, delivered) => {
    const app = freshApp();
    const id = await register(app);
    receiver(() => new Response('ok'));
    const token = await tokenFor(app);
    const watchers = [await watch(id, token), await watch(id, token)];
    if (delivered) {
      await publishEvent(app);
      await until('the delivery told', () => parsed(watchers[0]!.messages).length >= 2);
    }
    await evictDurableObject(endpointOf(id));
    await expectSuccess(await del(`webhook_id=${id}`, bearer(token)));
    for (const w of watchers) expect(await until('the close', () => w.closed.length > 0 && w.closed)).toEqual([GONE]);
    try {
      watchers[0]!.ws.send('ping');
    } catch {
      // Closed: nothing can be sent.
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(watchers[0]!.messages).not.toContain('pong');
    expect(await openWatchers(id)).toBe(0);
    // A page that comes after: D1 says the webhook is gone.
    await expectQueryFail(await upgrade(id, protocols(token)), 404);
  });

  it('an upgrade that reaches the object after the deletion was told to it is closed with 4404 at once', async () => {
    const app = freshApp();
    const id = await register(app);
    const token = await tokenFor(app);
    // Its endpoint noted as watched (as an upgrade notes it), then the webhook deleted.
    const early = await watch(id, token);
    early.ws.close(1000, 'left');
    await until('the close answered', () => early.closed.length > 0);
    await expectSuccess(await del(`webhook_id=${id}`, bearer(token)));
    const res = await endpointOf(id).fetch(new Request('https://endpoint/live', { headers: { upgrade: 'websocket' } }));
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    const closed: { code: number; reason: string }[] = [];
    ws.addEventListener('close', (e) => {
      closed.push({ code: e.code, reason: e.reason });
    });
    ws.accept();
    expect(await until('the close', () => closed.length > 0 && closed)).toEqual([GONE]);
  });

  it("the application's erasure closes the watchers of each of its webhooks with 4404", async () => {
    const app = freshApp();
    const other = freshApp();
    const first = await register(app);
    const second = (await registerWebhook(app, { url: `https://${app}.example.com/second` })).id;
    used.add(second);
    const kept = await register(other);
    receiver(() => new Response('ok'));
    const token = await tokenFor(app);
    const watchers = [await watch(first, token), await watch(second, token)];
    const elsewhere = await watch(kept, await tokenFor(other));
    await publishEvent(app);
    await until('the delivery told', () => parsed(watchers[0]!.messages).length >= 2);
    const res = await callApplication('DELETE', await adminHeaders(), { query: appQuery(app) });
    await expectEnvelope(res, 202, 0, 'success');
    for (const w of watchers) expect(await until('the close', () => w.closed.length > 0 && w.closed)).toEqual([GONE]);
    expect(await openWatchers(first)).toBe(0);
    expect(await openWatchers(second)).toBe(0);
    // Another application's watcher stays, and is answered.
    elsewhere.ws.send('ping');
    await until('pong', () => elsewhere.messages.includes('pong'));
    expect(elsewhere.closed).toEqual([]);
  });
});
