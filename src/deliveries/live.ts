// Live deliveries: a page watching a webhook's deliveries holds a WebSocket to the webhook's
// endpoint object, which tells it of each delivery that arrives and of each attempt (or other
// change) it records. The object accepts the sockets with the hibernation API: between messages
// it may be evicted from memory while the sockets stay open, and it keeps no timer for them, so an
// idle page keeps no object awake. A page's `ping` is answered `pong` by the runtime itself,
// without waking the object.
import type { Context } from 'hono';
import { LIVE_PROTOCOL, MAX_WATCHERS, TOO_MANY_REASON, TOO_MANY_WATCHERS } from '../core/live';
import type { AppEnv } from '../http/app-env';
import { ApiFailure } from '../http/envelope';
import { idParam, queryOf } from '../http/params';
import { inObject } from '../platform/objects';
import { ownedEndpoint } from './owned';

/** What a watcher is told: deliveries that arrived, or that had attempts or changes recorded. */
export type LiveChange = 'created' | 'recorded';

/**
 * GET /v1.0/app/nft/webhook/delivery/live?webhook_id=N, a WebSocket upgrade (426 otherwise):
 * once the token (authenticateSocket) and D1 say the application has the webhook (404 otherwise),
 * the upgrade goes to its endpoint object; a browser's subprotocol is answered.
 */
export async function watchDeliveries(c: Context<AppEnv>): Promise<Response> {
  if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') {
    throw new ApiFailure(426, 'a WebSocket upgrade is required', { headers: { upgrade: 'websocket' } });
  }
  const webhookId = idParam(queryOf(c.req.url));
  c.set('webhookId', webhookId);
  // A browser's WebSocket sends no bookmark: the primary, so a webhook just made is found.
  const endpoint = await ownedEndpoint(c, webhookId);
  // Only the upgrade goes on: no token, no header of the client's.
  const upgrade = new Request('https://endpoint/live', { headers: { upgrade: 'websocket' } });
  const res = await inObject(() => endpoint.fetch(upgrade));
  const offered = (c.req.header('sec-websocket-protocol') ?? '').split(',').map((p) => p.trim());
  if (res.status !== 101 || !offered.includes(LIVE_PROTOCOL)) return res;
  // Never the `bearer.` entry: the token is not sent back.
  return new Response(null, {
    status: 101,
    webSocket: res.webSocket,
    headers: { 'sec-websocket-protocol': LIVE_PROTOCOL },
  });
}

/** In the endpoint object: accepts a watcher (hibernatable), or refuses it past MAX_WATCHERS. */
export function acceptWatcher(ctx: DurableObjectState): Response {
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  const open = ctx.getWebSockets().filter((ws) => ws.readyState === WebSocket.OPEN).length;
  if (open >= MAX_WATCHERS) {
    // Accepted only to be closed with a code the page understands (an HTTP refusal reaches a
    // browser's WebSocket as nothing but a failed connection).
    server.accept();
    server.close(TOO_MANY_WATCHERS, TOO_MANY_REASON);
  } else {
    ctx.acceptWebSocket(server);
  }
  return new Response(null, { status: 101, webSocket: client });
}

/** The runtime answers a watcher's `ping` itself (the object stays asleep). */
export function answerPings(ctx: DurableObjectState): void {
  ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
}

/** Tells every watcher of the endpoint that `deliveryIds` changed: `{"change", "delivery_ids"}`. */
export function tellWatchers(ctx: DurableObjectState, change: LiveChange, deliveryIds: readonly string[]): void {
  if (deliveryIds.length === 0) return;
  const sockets = ctx.getWebSockets();
  if (sockets.length === 0) return;
  // Ids are int64 decimal text: written as JSON integers, every digit kept.
  const message = `{"change":"${change}","delivery_ids":[${deliveryIds.join(',')}]}`;
  for (const ws of sockets) {
    try {
      ws.send(message);
    } catch {
      // Closing already: its page reconnects and reads the log again.
    }
  }
}

/** A watcher closed its socket (or it failed): the close is answered, and it is no longer told. */
export function watcherClosed(ws: WebSocket): void {
  try {
    ws.close(1000, 'closed');
  } catch {
    // Closed already.
  }
}
