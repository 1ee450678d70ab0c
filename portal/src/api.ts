// The portal's client of this service's JSON API: the token from the link, the calls (same origin
// only, the token as Authorization: Bearer), exact int64 ids, and the service's reasons; and the
// live deliveries' WebSocket (the token in a subprotocol).

import { BEARER_PROTOCOL, LIVE_PROTOCOL } from '../../src/core/live';
import { isReadOnly, scopesOf } from '../../src/core/scopes';
import { objectTextAt, objectTextsAt } from './json-text';

const TOKEN_KEY = 'nft-webhook-portal.token';
/** A token is a signed JWT: three base64url parts (JWS compact). Anything else is no token. */
const TOKEN = /^[\w-]+\.[\w-]+\.[\w-]+$/;

/** The token a link gave, if any: a token, or `unreadable` (a fragment whose token cannot be read). */
export type Link = { token: string } | { unreadable: true } | null;

/**
 * Takes the token from the link (`#token=...`) at once: the address bar (and this history entry)
 * loses the fragment, and the token goes to sessionStorage, in place of the one before. A
 * fragment whose token cannot be read (empty, not percent-decodable, not a JWT) leaves no token
 * in this tab. Null when the address has no `#token=`.
 */
export function takeLink(): Link {
  const match = /^#(?:.*&)?token=([^&]*)/.exec(location.hash);
  if (match === null) return null;
  history.replaceState(history.state, '', location.pathname + location.search);
  let token = '';
  try {
    token = decodeURIComponent(match[1] as string).trim();
  } catch {
    // A malformed escape (`%E0%A4%A`): no token.
  }
  if (!TOKEN.test(token)) {
    sessionStorage.removeItem(TOKEN_KEY);
    return { unreadable: true };
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  return { token };
}

/** This tab's token, if any. */
export const storedToken = () => sessionStorage.getItem(TOKEN_KEY);

let token: string | null = null;
let onExpired: () => void = () => {};
/** The latest X-D1-Bookmark the service sent: GETs send it back, so they read the page's own writes. */
let bookmark: string | null = null;

export function useToken(value: string | null, expired: () => void) {
  token = value;
  onExpired = expired;
}

/**
 * Whether the session has ended (its link expired, or another link replaced it): from then on no
 * call is made, and none made before comes back, so nothing of the pages before it changes the
 * page that says so.
 */
let ended = false;
export function endSession() {
  ended = true;
}
/** What a call answers once the session has ended: nothing, ever. */
const never = <T>() => new Promise<T>(() => {});

export interface Claims {
  app: string | null;
  readOnly: boolean;
  expires: Date | null;
}

/**
 * The claim that names the application: the service's JWT_APP_CLAIM, which it writes into the
 * page (`<meta name="app-claim">`).
 */
const appClaim = () => document.querySelector<HTMLMetaElement>('meta[name="app-claim"]')?.content || 'sub';

/**
 * What the page shows depends on the token's claims, read here without verifying them (the
 * service verifies every call): the application in the claim the service reads, and read-only
 * when its scopes (`scope` or `scp`, read as the service reads them) name webhooks:read and not
 * webhooks:write.
 */
export function claimsOf(jwt: string): Claims {
  try {
    const part = (jwt.split('.')[1] ?? '').replace(/-/g, '+').replace(/_/g, '/');
    const bytes = Uint8Array.from(atob(part.padEnd(Math.ceil(part.length / 4) * 4, '=')), (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    const app = claims[appClaim()];
    return {
      app: typeof app === 'string' ? app : null,
      // Scopes the service cannot read: it refuses the token (401), and the page says the link expired.
      readOnly: isReadOnly(scopesOf(claims) ?? []),
      expires: typeof claims.exp === 'number' ? new Date(claims.exp * 1000) : null,
    };
  } catch {
    return { app: null, readOnly: false, expires: null };
  }
}

/** Keys whose integer values are int64 ids: kept as strings, with their exact digits. */
const ID_KEYS = new Set(['webhook_id', 'delivery_id']);
// A JSON string (so nothing inside one is ever touched), or a key with its integer value.
const TOKENS = /"(?:[^"\\]|\\.)*"(?:\s*:\s*(-?\d+)(?=\s*[,}]))?/g;

/**
 * JSON.parse, with the ids' integers turned into strings first: 2^53 + 1 stays 9007199254740993
 * (a double would round it). Strings in the text are skipped whole, so no text is changed.
 */
export function parseJson(text: string): unknown {
  const exact = text.replace(TOKENS, (match: string, digits: string | undefined) => {
    if (digits === undefined) return match;
    const key = match.slice(0, match.indexOf('"', 1) + 1);
    return ID_KEYS.has(JSON.parse(key) as string) ? match.replace(/-?\d+$/, `"${digits}"`) : match;
  });
  return JSON.parse(exact);
}

/** JSON.stringify, with the ids (decimal strings) written back as JSON integers. */
export function stringifyJson(value: unknown): string {
  return JSON.stringify(value).replace(/"(webhook_id|delivery_id)":"(\d{1,19})"/g, '"$1":$2');
}

/** A call the service refused (or that did not reach it). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number | null,
    /** The service's reason: X-Error-Detail, else the envelope's message. */
    readonly reason: string,
  ) {
    super(status === 0 ? reason : `${reason} (HTTP ${status})`);
  }
}

type Query = Record<string, string | undefined>;

/** The objects of a reply's value kept as their JSON text too (`<key>_text`): a double would round their numbers. */
const KEPT_AS_TEXT = ['filter', 'data'] as const;

interface Envelope {
  return?: number;
  message?: string;
  value?: unknown;
}

/** The reply's envelope; null when it is not one (the status then says what happened). */
function envelopeOf(text: string): Envelope | null {
  try {
    const value = parseJson(text);
    return typeof value === 'object' && value !== null ? (value as Envelope) : null;
  } catch {
    return null;
  }
}

/**
 * One call to this service's API; the envelope's `value`. A 401 means the link has expired. `json`
 * is a body already written as JSON text (sent as it is: a filter keeps every digit it was typed with).
 */
export async function call<T>(
  method: string,
  path: string,
  { query, body, json }: { query?: Query; body?: unknown; json?: string } = {},
): Promise<T> {
  if (ended) return never();
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined || json !== undefined) headers['content-type'] = 'application/json';
  if (method === 'GET' && bookmark !== null) headers['x-d1-bookmark'] = bookmark;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') params.set(k, v);
  const search = params.toString() === '' ? '' : `?${params}`;
  let res: Response;
  try {
    // A path, never a URL: the call goes to this origin only.
    res = await fetch(`/v1.0/app/nft/${path}${search}`, {
      method,
      headers,
      body: json ?? (body === undefined ? undefined : stringifyJson(body)),
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
    });
  } catch {
    if (ended) return never();
    throw new ApiError(0, null, 'The service could not be reached. Check your connection and try again.');
  }
  const mark = res.headers.get('x-d1-bookmark');
  if (mark !== null) bookmark = mark;
  const text = await res.text();
  if (ended) return never();
  if (res.status === 401) {
    ended = true;
    onExpired();
    return never();
  }
  const envelope = envelopeOf(text);
  if (!res.ok || envelope?.return !== 0) {
    const reason = res.headers.get('x-error-detail') ?? envelope?.message ?? res.statusText ?? 'failed';
    throw new ApiError(res.status, typeof envelope?.return === 'number' ? envelope.return : null, reason);
  }
  const value = envelope.value;
  // A webhook's filter (one, or each of a list's) and an event's data, as their text: shown with
  // every digit they were stored with.
  if (typeof value === 'object' && value !== null) {
    for (const key of KEPT_AS_TEXT) {
      if (key in value && (value as Record<string, unknown>)[key] !== null) {
        Object.assign(value, { [`${key}_text`]: objectTextAt(text, key) });
      }
    }
    const list = (value as { webhooks?: unknown }).webhooks;
    if (Array.isArray(list)) {
      // Every webhook object has `filter` (null without one): the texts are the list's, in order.
      const texts = objectTextsAt(text, 'filter', 4);
      list.forEach((webhook: Webhook, i) => {
        if (webhook.filter != null) webhook.filter_text = texts[i] ?? null;
      });
    }
  }
  return value as T;
}

/**
 * A WebSocket to this origin that tells of the webhook's new deliveries and attempts. A browser
 * cannot set Authorization on a WebSocket: the token goes as the `bearer.<token>` subprotocol,
 * never in the URL.
 */
export function liveSocket(webhookId: string): WebSocket {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = `${scheme}//${location.host}/v1.0/app/nft/webhook/delivery/live?webhook_id=${encodeURIComponent(webhookId)}`;
  return new WebSocket(url, token === null ? [LIVE_PROTOCOL] : [LIVE_PROTOCOL, `${BEARER_PROTOCOL}${token}`]);
}

export interface Webhook {
  webhook_id: string;
  url: string;
  is_enabled: boolean;
  event_types: string[] | null;
  description?: string | null;
  rate_limit?: number | null;
  /** The content filter, as the service stores it; null: none. */
  filter?: Record<string, unknown> | null;
  /** `fifo`: one delivery at a time, in order; null: unordered. */
  ordering?: 'fifo' | null;
  /** The filter's JSON text as the service sent it (the page adds it): every digit kept. */
  filter_text?: string | null;
  created_at: string;
  updated_at: string;
  /** Why it is disabled: its endpoint answered 410 Gone, it failed for too long, or the application; null while enabled. */
  disabled_reason?: 'gone' | 'failing' | 'forbidden' | 'not_found' | 'application' | null;
  /** When it was disabled; null while enabled. */
  disabled_at?: string | null;
  /** Its first failed attempt since its last success; null while it is not failing. */
  failing_since?: string | null;
  secret?: string;
  /** Where it delivers: its type and fields; `credentials: "set"` in place of its credentials. */
  destination?: { type: string; [field: string]: string };
  /** Its custom headers (an HTTP endpoint's); sensitive values shown as ••••. */
  headers?: Record<string, string>;
}

export interface Delivery {
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
  /** The body its requests carried, exactly (one delivery's read only). */
  payload?: string;
  attempt_log?: Attempt[];
}

export interface Attempt {
  attempt: number;
  attempted_at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  body: string | null;
}

export interface Counts {
  succeeded: number;
  failed: number;
  pending: number;
  cancelled: number;
  attempts: number;
  /** Attempts without a 2xx answer, those of deliveries still retrying included. */
  failed_attempts: number;
}

export interface Stats {
  webhook_id: string;
  last_24h: Counts;
  last_7d: Counts;
  hourly: { hour: string; succeeded: number; failed: number; attempts: number; failed_attempts: number }[];
}

/** What trying a filter answers; a miss says which condition failed (`found` absent: the path is missing). */
export interface FilterTrial {
  matches: boolean;
  why?: { path: string; operator: string; expected?: unknown; found?: unknown };
}

/** An event of the application (GET .../event?event_id=) and the deliveries it made. */
export interface EventJourney {
  event_id: string;
  type: string;
  data: unknown;
  /** `data` as the service sent it (the page adds it): every digit kept. */
  data_text?: string | null;
  created_at: string;
  deliveries: {
    webhook_id: string;
    delivery_id: string;
    status: Delivery['status'];
    attempts: number;
    last_status: number | null;
    last_error: string | null;
  }[];
}

export interface EventType {
  type: string;
  description: string;
  example: unknown;
}

let catalog: Promise<EventType[]> | undefined;
/** The event catalog, read once per page load (again after a failure). */
export function eventTypes(): Promise<EventType[]> {
  catalog ??= call<{ event_types: EventType[] }>('GET', 'event-types').then(
    (v) => v.event_types,
    (err) => {
      catalog = undefined;
      throw err;
    },
  );
  return catalog;
}
