// Live deliveries on the endpoint's page: a WebSocket to the service (api.ts liveSocket) that says
// when the webhook's deliveries change, so the page reads them again at once. A page refused
// because too many are open refreshes every 10 seconds instead; a lost connection is opened again,
// after 1, 2, 4 ... up to 30 seconds, and the page then reads what it missed. Closed because the
// webhook was deleted, it says so and opens none again.
import { useEffect, useRef, useState } from 'hono/jsx/dom';
import { TOO_MANY_WATCHERS, WEBHOOK_GONE } from '../../src/core/live';
import { liveSocket } from './api';

/**
 * `live`: told of changes as they happen; `connecting`: (re)opening; `polling`: refused, refreshing;
 * `deleted`: the webhook was deleted, nothing more comes.
 */
export type LiveState = 'connecting' | 'live' | 'polling' | 'deleted';

const POLL_MS = 10_000;
/** A ping now and then keeps the connection from looking idle (the service answers it without waking). */
const PING_MS = 30_000;
const MAX_BACKOFF_MS = 30_000;
/** Messages that come together make one read: the first waits this long for the others... */
const GATHER_MS = 200;
/**
 * ... and reads are at least this far apart: a busy endpoint's page reads the log and the stats
 * at most once a second (two calls, which count against the application's rate limit).
 */
const READ_EVERY_MS = 1_000;

/** Watches webhook `id`'s deliveries (none while null) while the page is open; `changed` when they changed. */
export function useLive(id: string | null, changed: () => void): LiveState {
  const [state, setState] = useState<LiveState>('connecting');
  const running = useRef<{ id: string; stop: () => void } | null>(null);
  useEffect(() => {
    // hono/jsx/dom can run an effect twice for one change of its deps (two renders committed at
    // once): the watcher of this id, when the page still holds it, is kept (one connection, not a
    // second one opened as the first closes); one of another id is stopped first.
    if (running.current !== null && running.current.id === id) return running.current.stop;
    running.current?.stop();
    running.current = null;
    if (id === null) return;
    let socket: WebSocket | null = null;
    let stopped = false;
    let failures = 0;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let gather: ReturnType<typeof setTimeout> | undefined;
    let ping: ReturnType<typeof setInterval> | undefined;
    let poll: ReturnType<typeof setInterval> | undefined;
    let readAt = 0;
    const tell = () => {
      gather ??= setTimeout(
        () => {
          gather = undefined;
          readAt = Date.now();
          changed();
        },
        Math.max(GATHER_MS, readAt + READ_EVERY_MS - Date.now()),
      );
    };
    const connect = () => {
      const ws = liveSocket(id);
      socket = ws;
      ws.onopen = () => {
        // Back after a loss: what changed meanwhile is read now.
        if (failures > 0) tell();
        failures = 0;
        setState('live');
        ping = setInterval(() => ws.send('ping'), PING_MS);
      };
      ws.onmessage = (e: MessageEvent) => {
        if (e.data !== 'pong') tell();
      };
      ws.onclose = (e: CloseEvent) => {
        clearInterval(ping);
        if (stopped) return;
        if (e.code === TOO_MANY_WATCHERS) {
          setState('polling');
          poll = setInterval(changed, POLL_MS);
          return;
        }
        if (e.code === WEBHOOK_GONE) {
          setState('deleted');
          return;
        }
        setState('connecting');
        const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** failures);
        failures++;
        retry = setTimeout(connect, delay / 2 + (Math.random() * delay) / 2);
      };
    };
    connect();
    const stop = () => {
      stopped = true;
      clearTimeout(retry);
      clearTimeout(gather);
      clearInterval(ping);
      clearInterval(poll);
      socket?.close(1000, 'page left');
      if (running.current?.stop === stop) running.current = null;
    };
    running.current = { id, stop };
    return stop;
  }, [id]);
  return state;
}

/** What the deliveries table says of its updates. */
export const LIVE_TEXT: Record<LiveState, string> = {
  live: 'Live: new deliveries and attempts appear as they happen.',
  connecting: 'Connecting for live updates…',
  polling: 'Too many pages are watching this endpoint: this one refreshes every 10 seconds.',
  deleted: 'No live updates: this webhook was deleted.',
};
