import { ApiFailure, badInput } from './envelope';

/** Largest PUT body accepted, in bytes. A valid body is well under 100 bytes. */
export const MAX_BODY_BYTES = 8192;

const INT64_MAX = '9223372036854775807';
const ID_RANGE = 'webhook_id must be a decimal integer from 1 to 9223372036854775807';

/**
 * A webhook id as canonical decimal text (no leading zeros), or `null` when `text` is not one:
 * only decimal digits, value 1..2^63-1. Ids stay text all the way to SQL, so they are never
 * rounded through a double.
 */
export function parseWebhookId(text: string): string | null {
  if (text.length === 0 || text.length > 64) return null;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch < 48 || ch > 57) return null;
  }
  let start = 0;
  while (start < text.length - 1 && text.charCodeAt(start) === 48) start++;
  const digits = start === 0 ? text : text.slice(start);
  if (digits === '0') return null;
  if (digits.length > INT64_MAX.length) return null;
  if (digits.length === INT64_MAX.length && digits > INT64_MAX) return null;
  return digits;
}

/** DELETE's input: exactly one `webhook_id` query parameter. */
export function webhookIdFromQuery(url: string): string {
  const q = url.indexOf('?');
  const values = q === -1 ? [] : new URLSearchParams(url.slice(q + 1)).getAll('webhook_id');
  if (values.length !== 1) {
    throw badInput(values.length === 0 ? 'webhook_id query parameter is required' : 'webhook_id must be given once');
  }
  const id = parseWebhookId(values[0] as string);
  if (id === null) throw badInput(ID_RANGE);
  return id;
}

/** PUT's input. `isEnabled` undefined: the body did not say, nothing is to change. */
export interface WebhookUpdate {
  webhookId: string;
  isEnabled?: boolean;
}

/** A JSON number's source text. A class, so no JSON value can pass for one. */
class NumberText {
  constructor(readonly text: string) {}
}

// A JSON number `webhook_id` is replaced by its source text before it becomes a double.
// (JSON.parse source text access; where a runtime lacks it, only safe integers are exact.)
function keepIdText(key: string, value: unknown, context?: { source?: string }): unknown {
  if (key !== 'webhook_id' || typeof value !== 'number') return value;
  if (context?.source !== undefined) return new NumberText(context.source);
  return new NumberText(Number.isSafeInteger(value) ? String(value) : '');
}

/** Validates a parsed PUT body (CONTRACT §5, §6). Unknown fields are ignored. */
export function webhookUpdate(body: unknown): WebhookUpdate {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badInput('body must be a JSON object');
  }
  const { webhook_id: raw, is_enabled: isEnabled } = body as Record<string, unknown>;
  if (raw === undefined) throw badInput('webhook_id is required');
  // A JSON integer arrives as NumberText (see keepIdText); a decimal string as itself.
  const text = typeof raw === 'string' ? raw : raw instanceof NumberText ? raw.text : null;
  const webhookId = text === null ? null : parseWebhookId(text);
  if (webhookId === null) throw badInput(ID_RANGE);
  if (isEnabled !== undefined && typeof isEnabled !== 'boolean') {
    throw badInput('is_enabled must be true or false');
  }
  return { webhookId, isEnabled };
}

const JSON_MEDIA_TYPE = /^application\/json[ \t]*(;|$)/i;

/** Reads PUT's body: JSON media type, at most MAX_BODY_BYTES, strict UTF-8, valid JSON. */
export async function readUpdate(req: Request): Promise<WebhookUpdate> {
  const type = req.headers.get('content-type');
  if (type === null || !JSON_MEDIA_TYPE.test(type)) {
    throw new ApiFailure(415, 'Content-Type must be application/json');
  }
  const bytes = await readLimited(req);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch (err) {
    if (err instanceof TypeError) throw badInput('body is not valid UTF-8');
    throw err;
  }
  let body: unknown;
  try {
    body = JSON.parse(text, keepIdText as (key: string, value: unknown) => unknown);
  } catch (err) {
    if (err instanceof SyntaxError) throw badInput('body is not valid JSON');
    throw err;
  }
  return webhookUpdate(body);
}

const tooLarge = () => new ApiFailure(413, `body larger than ${MAX_BODY_BYTES} bytes`);

/**
 * Reads a body stream up to MAX_BODY_BYTES: its bytes, or null when it is longer (the rest is
 * cancelled).
 */
async function readAtMost(body: ReadableStream<Uint8Array>): Promise<Uint8Array | null> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

async function readLimited(req: Request): Promise<Uint8Array> {
  const declared = req.headers.get('content-length');
  if (declared !== null) {
    // The runtime delimits the body by Content-Length, so it cannot be longer than declared.
    if (!/^\d+$/.test(declared) || Number(declared) > MAX_BODY_BYTES) throw tooLarge();
    return new Uint8Array(await req.arrayBuffer());
  }
  if (req.body === null) return new Uint8Array();
  const bytes = await readAtMost(req.body);
  if (bytes === null) throw tooLarge();
  return bytes;
}

/**
 * Reads what is left of a request body that no one read (a rejected PUT, a DELETE with a body),
 * up to MAX_BODY_BYTES, so that the client's keep-alive connection can carry its next request.
 * A longer body is cancelled: that connection closes, which is fine for a client sending too much.
 */
export async function discardBody(req: Request): Promise<void> {
  if (req.body === null || req.bodyUsed) return;
  try {
    await readAtMost(req.body);
  } catch {
    // The client went away: nothing to keep alive.
  }
}
