import type { Context } from 'hono';
import { ApiFailure, requestId, retryLater } from '../http/envelope';
import { log } from '../http/log';
import type { AppEnv } from '../types';
import type { Db } from './store';

// D1's transient errors that its documentation lists as safe to retry. Our writes are safe to
// repeat even when a failed attempt had committed: every statement is conditional on the row's
// current state (a create, on its write id), so a replay changes nothing more and writes no
// second audit record.
const TRANSIENT = [
  'Network connection lost',
  'storage caused object to be reset',
  'reset because its code was updated',
  'Cannot resolve D1 DB due to transient issue on remote node',
];
const OVERLOADED = 'D1 DB is overloaded';

/** Attempts at most, the first included. */
export const D1_MAX_ATTEMPTS = 4;
/** First backoff; it doubles per retry, with jitter. */
export const D1_BASE_DELAY_MS = 25;
/** No retry starts once this much time has passed since the first attempt. */
export const D1_RETRY_BUDGET_MS = 1000;
/** Seconds a client should wait after a 503 caused by storage. */
export const STORAGE_RETRY_AFTER = 2;

const unavailable = (detail: string, cause: unknown) => retryLater(503, detail, STORAGE_RETRY_AFTER, cause);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Where a request's session starts (D1 Sessions API, so reads can be served by read replicas):
 * writes at the primary; reads anywhere, or no older than the client's bookmark.
 */
export type SessionStart = 'first-primary' | 'first-unconstrained' | { bookmark: string };

// The last bookmark this isolate received from D1 in a session it did not start from a client's
// bookmark (so never one a client made up): a failed request whose session has none still
// answers one, since any bookmark D1 issued is a valid point to read from.
let latestBookmark: string | null = null;

/** Longest wait for a bookmark of D1's when a request failed without one. */
export const BOOKMARK_PROBE_MS = 250;

/**
 * Called before a failure is thrown. A session whose first query failed has no bookmark
 * (`getBookmark()` is null in workerd after a failed batch): when it did not start from one and
 * this isolate has none yet, one `SELECT 1` in the session, not retried and bounded in time, asks
 * D1 for one. Whatever happens, the failure is returned unchanged.
 */
async function withBookmark(session: D1DatabaseSession, start: SessionStart, failure: ApiFailure) {
  if (typeof start !== 'string' || latestBookmark !== null) return failure;
  try {
    if (session.getBookmark() === null) {
      await Promise.race([session.prepare('SELECT 1').first(), sleep(BOOKMARK_PROBE_MS)]);
    }
  } catch {
    // No bookmark to be had: the reply goes without one.
  }
  return failure;
}

/**
 * Runs one storage operation (one D1 round trip): transient D1 errors are retried with
 * exponential backoff and jitter within a time budget (`onRetry` is told of each retry); an
 * overloaded or still-failing database is a 503 failure with Retry-After; any other storage
 * error a 500. `onAttempt` is told of every attempt once it is over.
 */
export async function retryD1<T>(
  operation: () => Promise<T>,
  onRetry: (attempt: number, err: unknown) => void,
  onAttempt: (attempt: number) => void = () => {},
): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (message.includes(OVERLOADED)) throw unavailable('storage overloaded', err);
      if (!TRANSIENT.some((t) => message.includes(t))) throw new ApiFailure(500, 'storage failure', { cause: err });
      const ceiling = D1_BASE_DELAY_MS * 2 ** (attempt - 1);
      const delay = ceiling / 2 + Math.random() * (ceiling / 2);
      if (attempt >= D1_MAX_ATTEMPTS || Date.now() - started + delay > D1_RETRY_BUDGET_MS) {
        throw unavailable('storage unavailable after retries', err);
      }
      onRetry(attempt, err);
      await sleep(delay);
    } finally {
      onAttempt(attempt);
    }
  }
}

/**
 * Runs one storage operation (one D1 round trip) for the request in a D1 session, with the
 * retries of retryD1. The session's bookmark afterwards, success or failure, goes on the reply;
 * when a failed session has none, the bookmark it started from, else the isolate's last one, else
 * one asked of D1 (see withBookmark).
 */
export async function withD1<T>(
  c: Context<AppEnv>,
  start: SessionStart,
  operation: (db: Db) => Promise<T>,
): Promise<T> {
  const session = c.env.DB.withSession(typeof start === 'string' ? start : start.bookmark);
  const keepBookmark = () => {
    const bookmark = session.getBookmark();
    if (typeof start === 'string') {
      if (bookmark !== null) latestBookmark = bookmark;
      c.set('bookmark', bookmark ?? latestBookmark);
    } else {
      c.set('bookmark', bookmark ?? start.bookmark);
    }
  };
  try {
    return await retryD1(
      () => operation(session),
      (attempt, err) => log('warn', { request_id: requestId(c), msg: 'retrying transient D1 error', attempt }, err),
      (attempt) => {
        c.set('d1Attempts', attempt);
        keepBookmark();
      },
    );
  } catch (err) {
    if (!(err instanceof ApiFailure)) throw err;
    const failure = await withBookmark(session, start, err);
    keepBookmark();
    throw failure;
  }
}
