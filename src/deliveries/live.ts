// Live deliveries: a page watching a webhook's deliveries holds a WebSocket to the webhook's
// endpoint object, which tells it of each delivery that arrives and of each attempt (or other
// change) it records. The object accepts the sockets with the hibernation API: between messages
// it may be evicted from memory while the sockets stay open, and it keeps no timer for them, so an
// idle page keeps no object awake. A page's `ping` is answered `pong` by the runtime itself,
// without waking the object. Once the webhook is deleted (or its application erased) every watcher
// is closed with WEBHOOK_GONE, and a page that comes after is refused with it.
import type { Context } from 'hono';
import {
  LIVE_PROTOCOL,
  MAX_WATCHERS,
  TOO_MANY_REASON,
  TOO_MANY_WATCHERS,
  WEBHOOK_GONE,
  WEBHOOK_GONE_REASON,
} from '../core/live';
import type { AppEnv } from '../http/app-env';
import { ApiFailure } from '../http/envelope';
import { idParam, queryOf } from '../http/params';
import { inObject } from '../platform/objects';
import { ownedEndpoint } from './owned';

/** What a watcher is told: deliveries that arrived, or that had attempts or changes recorded. */
export type LiveChange = 'created' | 'recorded';

/** The endpoint object's key-value mark of a deleted webhook: its watchers are refused. */
const DELETED_KEY = 'deleted';

/**
 * GET /v1.0/app/nft/webhook/delivery/live?webhook_id=N, a WebSocket upgrade (426 otherwise):
 * once the token (authenticateSocket) and D1 say the application has the webhook (404 otherwise),
 * its application's object notes the endpoint (so that the webhook's deletion, and the
 * application's erasure, reach it, deliveries or none), then the upgrade goes to its endpoint
 * object; a browser's subprotocol is answered.
 */
export async function watchDeliveries(c: Context<AppEnv>): Promise<Response> {
  if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') {
    throw new ApiFailure(426, 'a WebSocket upgrade is required', { headers: { upgrade: 'websocket' } });
  }
  const webhookId = idParam(queryOf(c.req.url));
  c.set('webhookId', webhookId);
  // A browser's WebSocket sends no bookmark: the primary, so a webhook just made is found.
  const endpoint = await ownedEndpoint(c, webhookId);
  await inObject(() => c.env.APPLICATIONS.getByName(c.get('appId')).watching(webhookId));
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

/**
 * In the endpoint object: accepts a watcher, or refuses it past MAX_WATCHERS (TOO_MANY_WATCHERS)
 * or once the webhook is deleted (WEBHOOK_GONE). A refused socket is accepted only to be closed
 * with a code the page understands (an HTTP refusal reaches a browser's WebSocket as nothing but
 * a failed connection), and hibernatable like the others: one accepted in the object's memory and
 * closed at once ends, once the page answers its close, in the runtime's uncaught "Network
 * connection lost".
 */
export function acceptWatcher(ctx: DurableObjectState): Response {
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  const open = ctx.getWebSockets().filter((ws) => ws.readyState === WebSocket.OPEN).length;
  ctx.acceptWebSocket(server);
  if (ctx.storage.kv.get(DELETED_KEY) === true) server.close(WEBHOOK_GONE, WEBHOOK_GONE_REASON);
  else if (open >= MAX_WATCHERS) server.close(TOO_MANY_WATCHERS, TOO_MANY_REASON);
  return new Response(null, { status: 101, webSocket: client });
}

/**
 * The webhook is deleted: its watchers are closed with WEBHOOK_GONE and, with `mark`, so is a page
 * whose upgrade passed D1's check before the deletion and reaches the object after it. An erasure
 * marks nothing: it leaves the object nothing of the application (D1 has its webhooks no more).
 */
export function webhookGone(ctx: DurableObjectState, mark: boolean): void {
  if (mark) ctx.storage.kv.put(DELETED_KEY, true);
  for (const ws of ctx.getWebSockets()) {
    try {
      ws.close(WEBHOOK_GONE, WEBHOOK_GONE_REASON);
    } catch {
      // Closed already.
    }
  }
}

/** The runtime answers a watcher's `ping` itself (the object stays asleep). */
export function answerPings(ctx: DurableObjectState): void {
  ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
}

/** Tells every watcher of the endpoint that `deliveryIds` changed: `{"change", "delivery_ids"}`. */
export function tellWatchers(ctx: DurableObjectState, change: LiveChange, deliveryIds: readonly string[]): void {
  if (deliveryIds.length === 0) return;
  const sockets = ctx.getWebSockets().filter((ws) => ws.readyState === WebSocket.OPEN);
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
