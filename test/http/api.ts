// The service's API as the `http` tests call it over real sockets: register a webhook, publish an
// event, read the delivery log, run the Cron Trigger. For the shared `wrangler dev` (apiOf with
// inject's values) or one a test started itself (its own base URL and JWT secret).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { PATH, parseIds, tokenWith } from './client';
import { type Receiver, sleep, until } from './receiver';
import { type Dev, wranglerAsync } from './wrangler-dev';

export const EVENT_PATH = '/v1.0/platform/nft/event';
export const DELIVERY_PATH = '/v1.0/app/nft/webhook/delivery';
/** The platform's publisher: its token has the events:publish scope. */
const PUBLISHER = 'http-platform';

/** One attempt in the delivery log. */
export interface LoggedAttempt {
  attempt: number;
  attempted_at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  body: string | null;
}

/** A delivery in the log; delivery_id as its exact decimal digits (it may be past 2^53). */
export interface LoggedDelivery {
  delivery_id: string;
  event_id: string;
  type: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  /** The body its requests carried (one delivery's read, from the release that added it). */
  payload?: string;
  attempt_log?: LoggedAttempt[];
}

export function apiOf(baseUrl: string, secret: string) {
  /** A request as `appId` (a token of its own); the status and the body's text. */
  async function call(method: string, path: string, appId: string, body?: string, scope?: string) {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${await tokenWith(secret, appId, scope)}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body,
    });
    return { status: res.status, text: await res.text() };
  }

  return {
    call,
    /**
     * A request as `appId` (with `scope` when given), `body` sent as JSON: the status, the
     * envelope's value and the reply's text (for a failure's message).
     */
    async json<T = unknown>(appId: string, method: string, path: string, body?: unknown, scope?: string) {
      const res = await call(method, path, appId, body === undefined ? undefined : JSON.stringify(body), scope);
      return { status: res.status, value: (JSON.parse(res.text) as { value?: T }).value as T, text: res.text };
    },
    /** Registers a webhook of `appId` at `url`; its id and signing secret. */
    async register(appId: string, url: string, eventTypes?: string[]) {
      const res = await call(
        'POST',
        PATH,
        appId,
        JSON.stringify({ url, ...(eventTypes ? { event_types: eventTypes } : {}) }),
      );
      expect(res.status, res.text).toBe(201);
      const { webhook_id: id, secret } = JSON.parse(res.text).value as { webhook_id: number; secret: string };
      expect(secret).toMatch(/^whsec_/);
      return { id, secret };
    },
    /** Publishes an event over HTTP: `data` is raw JSON text, sent as it is. Answers its event_id. */
    async publish(appId: string, type: string, data: string, id?: string): Promise<string> {
      const body = `{"app_id":${JSON.stringify(appId)},"type":${JSON.stringify(type)},${id === undefined ? '' : `"id":${JSON.stringify(id)},`}"data":${data}}`;
      const res = await call('POST', EVENT_PATH, PUBLISHER, body, 'events:publish');
      expect(res.status, res.text).toBe(202);
      const match = /^\{"return":0,"message":"success","value":\{"event_id":"(evt_[0-9a-f]{32})"\}\}$/.exec(res.text);
      expect(match, res.text).not.toBeNull();
      return match?.[1] as string;
    },
    /** The webhook's delivery log (one page of 100, newest first). */
    async deliveries(appId: string, webhookId: number | string): Promise<LoggedDelivery[]> {
      const res = await call('GET', `${DELIVERY_PATH}?webhook_id=${webhookId}&limit=100`, appId);
      expect(res.status, res.text).toBe(200);
      return parseIds(res.text).value.deliveries;
    },
    /** One delivery with its attempt log; null when the API answers 404. */
    async delivery(appId: string, deliveryId: string): Promise<LoggedDelivery | null> {
      const res = await call('GET', `${DELIVERY_PATH}?delivery_id=${deliveryId}`, appId);
      if (res.status === 404) return null;
      expect(res.status, res.text).toBe(200);
      return parseIds(res.text).value;
    },
    /** Runs the Cron Trigger once (wrangler dev --test-scheduled). */
    async scheduled() {
      const res = await fetch(`${baseUrl}/__scheduled`);
      expect(res.status, await res.text()).toBe(200);
    },
  };
}

export type Api = ReturnType<typeof apiOf>;

/** Polls `webhookId`'s delivery log until `done` (for at most `timeoutMs`); the log (newest first). */
export function logUntil(
  api: Api,
  appId: string,
  webhookId: number,
  what: string,
  done: (log: LoggedDelivery[]) => boolean,
  timeoutMs: number,
) {
  let last: LoggedDelivery[] = [];
  return until(
    () => `${what} (last seen: ${JSON.stringify(last)})`,
    async () => {
      last = await api.deliveries(appId, webhookId);
      return done(last) ? last : undefined;
    },
    timeoutMs,
    250,
  );
}

/**
 * A temporary folder of the test file's own (its name starting `prefix`), with the `wrangler dev`
 * and receiver a test sets here: after all the file's tests, both are stopped and the folder removed.
 */
export function ownFolder(prefix: string) {
  const own: { folder: string; dev?: Dev; receiver?: Receiver } = { folder: mkdtempSync(join(tmpdir(), prefix)) };
  afterAll(async () => {
    await own.dev?.stop();
    await own.receiver?.close();
    rmSync(own.folder, { recursive: true, force: true });
  });
  return own;
}

/**
 * Runs SQL on the local D1 kept in `persistTo` (a running wrangler dev shares it): the rows of each
 * statement. Without blocking (a receiver keeps answering), one statement list at a time, and
 * again when the database was locked by the Worker's own write (SQLITE_BUSY).
 */
export function d1Of(persistTo: string, cwd?: string) {
  let queue: Promise<unknown> = Promise.resolve();
  return (command: string): Promise<Record<string, unknown>[][]> => {
    const args = ['d1', 'execute', 'DB', '--local', '--persist-to', persistTo, '--json', '--command', command];
    const run = async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          const out = await wranglerAsync(args, cwd);
          return (JSON.parse(out) as { results: Record<string, unknown>[] }[]).map((r) => r.results);
        } catch (err) {
          if (attempt >= 5 || !/SQLITE_BUSY|database is locked/.test(String(err))) throw err;
          await sleep(200 * attempt);
        }
      }
    };
    const result = queue.then(run, run);
    queue = result.catch(() => undefined);
    return result;
  };
}
