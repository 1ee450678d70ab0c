// The request's D1 session (Sessions API, so reads can be served by read replicas): one storage
// operation per call, retried as platform/d1 does, its bookmark sent back as X-D1-Bookmark.
import type { Context } from 'hono';
import { StorageFailure } from '../core/errors';
import { log } from '../core/log';
import { type Db, retryD1, sleep } from '../platform/d1';
import type { AppEnv } from './app-env';
import { badInput, requestId } from './envelope';
import { parseBookmark } from './params';

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
async function withBookmark(session: D1DatabaseSession, start: SessionStart, failure: StorageFailure) {
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
    if (!(err instanceof StorageFailure)) throw err;
    const failure = await withBookmark(session, start, err);
    keepBookmark();
    throw failure;
  }
}

/** Where a read's D1 session starts: no older than the client's `X-D1-Bookmark`, else anywhere. */
export function sessionStart(header: string | undefined): SessionStart {
  if (header === undefined) return 'first-unconstrained';
  const bookmark = parseBookmark(header);
  if (bookmark === null) throw badInput('X-D1-Bookmark is not a D1 bookmark');
  return { bookmark };
}
