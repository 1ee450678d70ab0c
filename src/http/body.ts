import { ApiFailure, badInput } from './envelope';

/** Largest PUT or POST body accepted, in bytes. A valid PUT body is well under 100 bytes; a POST
 * body carries a URL of at most 2,048 characters. */
export const MAX_BODY_BYTES = 8192;

/** A JSON number's source text. A class, so no JSON value can pass for one. */
export class NumberText {
  constructor(readonly text: string) {}
}

// A JSON number `webhook_id` or `delivery_id` is replaced by its source text before it becomes a double.
// (JSON.parse source text access; where a runtime lacks it, only safe integers are exact.)
function keepIdText(key: string, value: unknown, context?: { source?: string }): unknown {
  if ((key !== 'webhook_id' && key !== 'delivery_id') || typeof value !== 'number') return value;
  if (context?.source !== undefined) return new NumberText(context.source);
  return new NumberText(Number.isSafeInteger(value) ? String(value) : '');
}

// Every JSON number keeps the digits it was sent with when written again (JSON.rawJSON): an event's
// `data` reaches the webhooks as the publisher wrote it, never rounded through a double.
const JSON_WITH_RAW = JSON as JSON & { rawJSON(text: string): unknown };
function keepNumberText(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== 'number' || context?.source === undefined || String(value) === context.source) return value;
  return JSON_WITH_RAW.rawJSON(context.source);
}

/** How a body is read: its largest size, and whether every number keeps its text. */
export interface BodyOptions {
  maxBytes?: number;
  exactNumbers?: boolean;
}

/** Deepest nesting of arrays and objects a JSON body may have. A valid body has depth 1. */
export const MAX_JSON_DEPTH = 32;

/**
 * Whether JSON text nests arrays and objects more than `max` levels deep: one linear pass that
 * counts `[` and `{` outside strings (escapes included). Parsing (and walking with a reviver)
 * recurses per level, so text nested a few thousand levels deep must be refused before it is
 * parsed. Pure, for any JSON text; text that is not JSON is left to the parser.
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // `\`: the next character is escaped
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) {
      inString = true;
    } else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) return true;
    } else if (ch === 0x5d || ch === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** A JSON request body: its exact bytes and its parsed value. */
export interface JsonBody {
  bytes: Uint8Array;
  value: unknown;
}

const JSON_MEDIA_TYPE = /^application\/json[ \t]*(;|$)/i;

/**
 * Reads a JSON body (PUT, POST): JSON media type (415), at most `maxBytes` (413; default
 * MAX_BODY_BYTES), strict UTF-8, nested at most MAX_JSON_DEPTH levels and valid JSON (400). A
 * `webhook_id` number arrives as its NumberText; with `exactNumbers`, every number that
 * JSON.stringify would write otherwise is kept as its source text.
 */
export async function readJsonBody(
  req: Request,
  { maxBytes = MAX_BODY_BYTES, exactNumbers = false }: BodyOptions = {},
): Promise<JsonBody> {
  const type = req.headers.get('content-type');
  if (type === null || !JSON_MEDIA_TYPE.test(type)) {
    throw new ApiFailure(415, 'Content-Type must be application/json');
  }
  const bytes = await readLimited(req, maxBytes);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch (err) {
    if (err instanceof TypeError) throw badInput('body is not valid UTF-8');
    throw err;
  }
  return { bytes, value: parseJsonText(text, exactNumbers) };
}

/**
 * Parses JSON text of a request body or a queue message: nested at most MAX_JSON_DEPTH levels
 * and valid JSON (400 otherwise). A `webhook_id` number arrives as its NumberText; with
 * `exactNumbers`, every number keeps its source text.
 */
export function parseJsonText(text: string, exactNumbers = false): unknown {
  if (jsonTooDeep(text)) throw badInput('body nested too deeply');
  try {
    const reviver = exactNumbers ? keepNumberText : keepIdText;
    return JSON.parse(text, reviver as (key: string, value: unknown) => unknown);
  } catch (err) {
    if (err instanceof SyntaxError) throw badInput('body is not valid JSON');
    throw err;
  }
}

/** A parsed JSON body that must be an object (PUT, POST); unknown fields are the caller's to ignore. */
export function jsonObject(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badInput('body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

const tooLarge = (maxBytes: number) => new ApiFailure(413, `body larger than ${maxBytes} bytes`);

/**
 * Most bytes of an unwanted body that are read (and thrown away) before giving up on it: the
 * smallest request body limit of Cloudflare's plans, so in production every body is read to its
 * end. A body nobody reads must still be read: cancelling it breaks the client's keep-alive
 * connection, and its next, valid request fails (wrangler dev answers it 503).
 */
export const MAX_DRAIN_BYTES = 100 * 1024 * 1024;

/**
 * Reads the rest of a body and keeps none of it, so the memory it takes stays one chunk whatever
 * the client declares or streams. `seen` bytes were read before. Past MAX_DRAIN_BYTES the rest is
 * cancelled.
 */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>, seen = 0): Promise<void> {
  for (let size = seen; ; ) {
    const { done, value } = await reader.read();
    if (done) return;
    size += value.byteLength;
    if (size > MAX_DRAIN_BYTES) {
      await reader.cancel();
      return;
    }
  }
}

/**
 * Reads a body stream up to `maxBytes`: its bytes, or null when it is longer (the rest is read
 * and dropped, see drain).
 */
async function readAtMost(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array | null> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await drain(reader, size);
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

/**
 * The client went away before it had sent its whole body. Nobody reads the reply; its status, 499
 * (nginx's "client closed request"), and detail are for the request log, which says so at info:
 * it is no failure of the service.
 */
const clientGone = (cause: unknown) => new ApiFailure(499, 'client went away before sending its whole body', { cause });

async function readLimited(req: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = req.headers.get('content-length');
  // The runtime delimits the body by Content-Length, so it cannot be longer than declared. A
  // body declared too long is not read here: the Worker drains it after the reply is made.
  if (declared !== null && (!/^\d+$/.test(declared) || Number(declared) > maxBytes)) throw tooLarge(maxBytes);
  let bytes: Uint8Array | null;
  try {
    if (declared !== null) bytes = new Uint8Array(await req.arrayBuffer());
    else bytes = req.body === null ? new Uint8Array() : await readAtMost(req.body, maxBytes);
  } catch (err) {
    // Reading the bytes the client sends fails only when the client goes away mid-body.
    throw clientGone(err);
  }
  if (bytes === null) throw tooLarge(maxBytes);
  return bytes;
}

/**
 * Reads what is left of a request body that no one read (a rejected request, a body too large,
 * a DELETE or GET with a body) and drops it, so that the client's keep-alive connection can carry
 * its next request.
 */
export async function discardBody(req: Request): Promise<void> {
  if (req.body === null || req.bodyUsed) return;
  try {
    await drain(req.body.getReader());
  } catch {
    // The client went away: nothing to keep alive.
  }
}
