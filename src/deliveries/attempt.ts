// One attempt: POST of the event's exact bytes to the webhook's URL, signed, within the timeout.
import { MASKED } from '../core/custom-headers';
import type { DisabledCause } from '../webhooks/store/health';

/**
 * The kinds of failure that have no HTTP status, and `rejected`: a destination's API answered 2xx
 * but its reply says the message was not taken (an EventBridge entry that failed).
 */
export type AttemptError = 'timeout' | 'connection' | 'tls' | 'url_refused' | 'rejected';

/**
 * A destination API's refusal that names why it keeps failing: `forbidden` (its credentials or
 * their permissions were refused) or `not_found` (the queue, bus or topic does not exist), and the
 * answer that said so (its status, and the API's own error code when it gave one).
 */
export interface Refusal {
  cause: DisabledCause;
  answer: string;
}

/** What one attempt saw. */
export interface AttemptResult {
  /** The HTTP status, or null when no reply came. */
  status: number | null;
  error: AttemptError | null;
  /** The first 1 KiB of the reply body as UTF-8 text (invalid bytes replaced). */
  body: string | null;
  /** Seconds the receiver asked to wait (Retry-After on 429, 502, 503, 504), when it said. */
  retryAfter: number | null;
  durationMs: number;
  /** A destination API's refusal (never set for an HTTP endpoint, whose 403 or 404 is its own). */
  refused?: Refusal;
  /**
   * A destination API said it throttles (429, or its throttling error code): retried by the
   * schedule like any failure, but not counted toward auto-disable. Never set for an HTTP endpoint.
   */
  throttled?: true;
}

/** Bytes of a reply body kept for the record; the rest is discarded. */
export const KEPT_BODY_BYTES = 1024;
export const USER_AGENT = 'nft-webhook-api/1.0 (webhook delivery; +https://www.standardwebhooks.com)';
const RETRY_AFTER_STATUSES = new Set([429, 502, 503, 504]);

/** The request headers of an attempt. */
export interface AttemptRequest {
  url: string;
  body: Uint8Array;
  /** webhook-id, webhook-timestamp, webhook-signature. */
  headers: Record<string, string>;
  timeoutMs: number;
  /** Credentials and tokens the request carries: a reply that quotes one is kept with it masked. */
  secrets?: readonly string[];
}

/** Retry-After as seconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  // Any number of digits: a huge value is still a long wait (the caller caps it at 12 hours).
  if (/^\d+$/.test(text)) return Number(text);
  // An HTTP date (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, or the obsolete forms): in GMT.
  const date = /GMT$/i.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}

/** The length of the start of `text` that is at most KEPT_BODY_BYTES bytes of UTF-8, without splitting a character. */
function keptLength(text: string): number {
  let size = 0;
  let end = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0) as number;
    size += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (size > KEPT_BODY_BYTES) break;
    end += ch.length;
  }
  return end;
}

/** A secret, or a form of one, shorter than this is not searched for: it would mask ordinary text. */
const MASKED_MIN = 6;
/** A space-separated part of a secret (the token after `Bearer`) shorter than this is not searched for. */
const MASKED_PART_MIN = 8;

/**
 * Every form in which a reply may quote a secret the request carried: as sent, JSON-escaped,
 * URL-encoded, and each of its space-separated parts (the credential after a scheme).
 */
function maskedForms(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    for (const form of [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)])
      if (form.length >= MASKED_MIN) forms.add(form);
    for (const part of secret.split(/\s+/)) if (part !== secret && part.length >= MASKED_PART_MIN) forms.add(part);
  }
  return [...forms];
}

/** Bytes read beyond the kept part, so that a secret that starts in it is seen whole. */
const beyondKept = (secrets: readonly string[]) => Math.max(0, ...secrets.map((s) => s.length * 3));

/**
 * The first `end` characters of `text` with every secret that starts among them masked (whole,
 * though it runs past `end`): no part of one is ever kept.
 */
function masked(text: string, end: number, secrets: readonly string[]): string {
  // The longest first, should one secret start another.
  const present = secrets.filter((s) => s.length > 0 && text.includes(s)).sort((a, b) => b.length - a.length);
  if (present.length === 0) return text.slice(0, end);
  let out = '';
  let i = 0;
  while (i < end) {
    const secret = present.find((s) => text.startsWith(s, i));
    if (secret === undefined) {
      out += text[i];
      i++;
    } else {
      out += MASKED;
      i += secret.length;
    }
  }
  return out;
}

/**
 * The kept part of a body as text: its first KEPT_BODY_BYTES bytes as UTF-8 (a character cut in
 * two at the end dropped, invalid bytes replaced), then cut to at most KEPT_BODY_BYTES bytes
 * (a replacement character takes three) without splitting a character. Any of `secrets` (in any
 * of its forms, see maskedForms) that starts in it is masked: the record of a reply that quotes the
 * request keeps no credential.
 */
export function keptText(bytes: Uint8Array, secrets: readonly string[] = []): string {
  const forms = maskedForms(secrets);
  const text = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false }).decode(
    bytes.subarray(0, KEPT_BODY_BYTES + beyondKept(forms)),
    { stream: true },
  );
  const kept = masked(text, keptLength(text), forms);
  return kept.slice(0, keptLength(kept));
}

/**
 * Reads at most `limit` bytes of a body (the kept part, and what a secret starting in it needs),
 * then cancels the rest. Whatever ends the read (the limit reached, the end, the timeout's abort,
 * an error), the body is cancelled: no reply is ever left half read, holding its connection.
 */
async function readKept(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array> {
  if (body === null) return new Uint8Array();
  const reader = body.getReader();
  const kept = new Uint8Array(limit);
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) return kept.subarray(0, size);
      const take = Math.min(value.byteLength, limit - size);
      kept.set(value.subarray(0, take), size);
      size += take;
    }
    return kept;
  } finally {
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

function errorKind(err: unknown, timedOut: boolean): AttemptError {
  if (timedOut) return 'timeout';
  const message = err instanceof Error ? `${err.name} ${err.message}` : String(err);
  return /tls|ssl|certificate|handshake/i.test(message) ? 'tls' : 'connection';
}

/**
 * Makes one attempt. Redirects are not followed (a 3xx is a failure like any other status). The
 * timeout covers the whole attempt, reading the kept part of the reply included. Never throws.
 */
export async function attempt(request: AttemptRequest, fetcher: typeof fetch = fetch): Promise<AttemptResult> {
  const started = Date.now();
  const secrets = request.secrets ?? [];
  const readBeyond = beyondKept(maskedForms(secrets));
  const controller = new AbortController();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
      reject(new Error('attempt timed out'));
    }, request.timeoutMs);
  });
  try {
    const run = async () => {
      const res = await fetcher(request.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...request.headers },
        body: request.body,
        redirect: 'manual',
        signal: controller.signal,
      });
      // Should the timeout have won meanwhile, the read fails on the abort and cancels the reply.
      const kept = await readKept(res.body, KEPT_BODY_BYTES + readBeyond);
      return { res, kept };
    };
    const { res, kept } = await Promise.race([run(), deadline]);
    return {
      status: res.status,
      error: null,
      body: keptText(kept, secrets),
      retryAfter: RETRY_AFTER_STATUSES.has(res.status) ? retryAfterSeconds(res.headers.get('retry-after')) : null,
      durationMs: Date.now() - started,
    };
  } catch (err) {
    return {
      status: null,
      error: errorKind(err, timedOut),
      body: null,
      retryAfter: null,
      durationMs: Date.now() - started,
    };
  } finally {
    clearTimeout(timer);
  }
}
