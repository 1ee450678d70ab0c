// What every destination type does for the sending pass: send one signed message, and say what
// came of it as an attempt's result (status, the first 1 KiB of the reply, whether it failed).
// The pass retries by its schedule; a provider never retries inside an attempt, so the log counts
// what reached the API. Each type's fields and credentials are described in core/destinations.ts.
import type { ApiBase, DestinationFields } from '../../core/destinations';
import type { AttemptResult, Refusal } from '../attempt';

/** One message as the pass signed it: the same for every type. */
export interface OutgoingMessage {
  webhookId: string;
  /** The `webhook-id` (the event's id). */
  messageId: string;
  /** The payload's JSON text, exactly what an HTTP endpoint receives. */
  payload: string;
  body: Uint8Array;
  /** webhook-id, webhook-timestamp, webhook-signature. */
  signature: Record<string, string>;
  /** The webhook is FIFO: its messages carry the webhook's id as their group or ordering key. */
  fifo: boolean;
}

/** What sending needs beyond the message. */
export interface SendOptions {
  fetcher: typeof fetch;
  timeoutMs: number;
  /** The operator's stand-ins (DESTINATION_API_BASES); empty: the APIs' own hosts. */
  bases: ReadonlyMap<ApiBase, string>;
  /**
   * Requests under way that the pass's concurrent attempts share (a Pub/Sub token), by key. One
   * map per pass: a promise whose I/O belongs to another object (or an earlier, ended request)
   * may never settle here.
   */
  shared: Map<string, Promise<string>>;
}

/** A destination with its credentials opened, as one attempt sends to it. */
export interface OpenDestination {
  fields: DestinationFields;
  credentials: Record<string, string>;
  /** Its custom headers (HTTP), sensitive ones opened. */
  headers: Record<string, string>;
  /** What was opened (credentials, sensitive headers' values): masked in any reply that quotes it. */
  secrets: string[];
}

export interface Provider {
  send(destination: OpenDestination, message: OutgoingMessage, options: SendOptions): Promise<AttemptResult>;
}

/** The payload object itself plus `message_id` (EventBridge, Cloudflare Queues), as JSON text. */
export function payloadWithId(message: OutgoingMessage): string {
  const text = message.payload.trimEnd();
  return `${text.slice(0, -1)},"message_id":${JSON.stringify(message.messageId)}}`;
}

/** A result the API answered 2xx but whose reply says the message was not taken. */
export const rejected = (result: AttemptResult): AttemptResult => ({ ...result, error: 'rejected' });

/** The reply's JSON, or null when the kept part is not JSON. */
export function replyJson(result: AttemptResult): Record<string, unknown> | null {
  try {
    const value = JSON.parse(result.body ?? '');
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const STATUS_TEXT: Record<number, string> = { 403: 'Forbidden', 404: 'Not Found' };
/** The APIs' own error codes that mean the same: AWS's `__type` (after its `#`), Google's token endpoint's `error`. */
const CODES: Record<string, Refusal['cause']> = {
  AccessDenied: 'forbidden',
  AccessDeniedException: 'forbidden',
  'KMS.AccessDeniedException': 'forbidden',
  UnrecognizedClientException: 'forbidden',
  InvalidClientTokenId: 'forbidden',
  invalid_grant: 'forbidden',
  invalid_client: 'forbidden',
  unauthorized_client: 'forbidden',
  QueueDoesNotExist: 'not_found',
  'AWS.SimpleQueueService.NonExistentQueue': 'not_found',
  ResourceNotFoundException: 'not_found',
};

/** An API's error code as its reply names it: AWS's `__type` is `<namespace>#<code>`. */
const codeOf = (raw: unknown): string | undefined =>
  typeof raw === 'string' ? raw.slice(raw.lastIndexOf('#') + 1) : undefined;

/**
 * Whether a failed attempt's reply from an API names why it fails for good: 403 (or an error code
 * that means it), or 404 (or one that means it). The schedule still retries it; this names the
 * reason when the webhook is disabled. `reply`: the reply's JSON, when the caller has read it.
 */
export function refusalOf(result: AttemptResult, reply = replyJson(result)): Refusal | undefined {
  const { status } = result;
  if (status === null || status < 400 || status >= 500) return undefined;
  const named = codeOf(reply?.__type ?? reply?.error);
  const code = named !== undefined && Object.hasOwn(CODES, named) ? named : undefined;
  // Not a 401: Pub/Sub's means an access token expired or was revoked, which the next attempt renews.
  const byStatus = status === 404 ? 'not_found' : status === 403 ? 'forbidden' : undefined;
  const cause = (code === undefined ? undefined : CODES[code]) ?? byStatus;
  if (cause === undefined) return undefined;
  // e.g. "403 Forbidden (AccessDeniedException)", "400 (QueueDoesNotExist)", "404 Not Found".
  const answer = [status, STATUS_TEXT[status], code === undefined ? undefined : `(${code})`];
  return { cause, answer: answer.filter((part) => part !== undefined).join(' ') };
}

/** The APIs' throttling codes: AWS's `__type` (after its `#`) or an EventBridge entry's `ErrorCode`. */
const THROTTLING = new Set([
  'ThrottlingException',
  'Throttling',
  'RequestThrottled',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'KMS.ThrottlingException',
]);

/**
 * Whether a failed attempt's API said it throttles: a 429 (Cloudflare's and Google's, as
 * RESOURCE_EXHAUSTED), AWS's throttling error codes, or an EventBridge entry refused for throttling.
 */
export function throttledOf(result: AttemptResult, reply = replyJson(result)): boolean {
  if (result.status === 429) return true;
  if (result.status === null || (result.status < 400 && result.error !== 'rejected')) return false;
  const entry = Array.isArray(reply?.Entries) ? (reply.Entries[0] as Record<string, unknown> | undefined) : undefined;
  const code = codeOf(reply?.__type ?? entry?.ErrorCode);
  return code !== undefined && THROTTLING.has(code);
}
