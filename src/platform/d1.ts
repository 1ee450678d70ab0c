// D1: one storage operation is one round trip, its transient errors retried.
import { StorageFailure } from '../core/errors';
import { log } from '../core/log';

/** What the stores' functions run on: the database, or one of its D1 sessions. */
export type Db = Pick<D1Database, 'prepare' | 'batch'>;

// D1's transient errors that its documentation lists as safe to retry. Our writes are safe to
// repeat even when a failed attempt had committed: every statement is conditional on the row's
// current state (a create, on its write id), so a replay changes nothing more and writes no
// second audit record.
const TRANSIENT = [
  'Network connection lost',
  'storage caused object to be reset',
  'reset because its code was updated',
  'Cannot resolve D1 DB due to transient issue on remote node',
  // SQLite's own "busy": the database file held for a moment by another connection (locally, a
  // `wrangler d1 execute --local` beside `wrangler dev`); it passes by itself.
  'SQLITE_BUSY',
];
const OVERLOADED = 'D1 DB is overloaded';

/** Attempts at most, the first included. */
export const D1_MAX_ATTEMPTS = 4;
/** First backoff; it doubles per retry, with jitter. */
export const D1_BASE_DELAY_MS = 25;
/** No retry starts once this much time has passed since the first attempt. */
export const D1_RETRY_BUDGET_MS = 1000;

const unavailable = (detail: string, cause: unknown) => new StorageFailure(detail, true, cause);

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The log line of a retried transient D1 error (outside a request). */
export const logRetry = (attempt: number, err: unknown) =>
  log('warn', { msg: 'retrying transient D1 error', attempt }, err);

/**
 * Runs one storage operation (one D1 round trip): transient D1 errors are retried with
 * exponential backoff and jitter within a time budget (`onRetry` is told of each retry); an
 * overloaded or still-failing database is a retryable StorageFailure; any other storage error
 * one that is not. `onAttempt` is told of every attempt once it is over.
 */
export async function retryD1<T>(
  operation: () => Promise<T>,
  onRetry: (attempt: number, err: unknown) => void = logRetry,
  onAttempt: (attempt: number) => void = () => {},
): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (message.includes(OVERLOADED)) throw unavailable('storage overloaded', err);
      if (!TRANSIENT.some((t) => message.includes(t))) throw new StorageFailure('storage failure', false, err);
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
