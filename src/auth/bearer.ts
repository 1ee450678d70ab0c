import type { Context, MiddlewareHandler } from 'hono';
import { errors, type JWTPayload, jwtVerify } from 'jose';
import { BEARER_PROTOCOL } from '../core/live';
import { isReadOnly, scopesOf, WRITE_SCOPE } from '../core/scopes';
import { isAppId } from '../core/text';
import type { AppEnv } from '../http/app-env';
import { ApiFailure, Code, retryLater } from '../http/envelope';
import { withoutOws } from '../http/headers';
import { authFailure } from '../http/limits';
import { type AuthConfig, authConfig } from './config';
import { KeysUnavailable } from './keys';

/** Longest token we are willing to parse: a longer one is refused before any parsing. */
export const MAX_TOKEN_LENGTH = 8192;

const REALM = 'Bearer realm="nft-webhook"';
// Scheme word case-insensitive, one or more spaces, then a token of JWS compact characters.
const BEARER = /^bearer +([\w.~+/=-]+)$/i;

/** 401 with the RFC 6750 challenge; `error="invalid_token"` only when a token was sent. */
function invalidToken(detail: string, tokenSent: boolean, cause?: unknown): ApiFailure {
  const challenge = tokenSent ? `${REALM}, error="invalid_token", error_description="${detail}"` : REALM;
  return new ApiFailure(401, detail, {
    code: Code.invalidToken,
    headers: { 'www-authenticate': challenge },
    cause,
  });
}

/**
 * The bearer token of an `Authorization` header, checked for form and size before any parsing.
 * Whitespace around the header value is not part of it.
 */
export function bearerToken(sent: string | undefined): string {
  const header = sent === undefined ? undefined : withoutOws(sent);
  if (header === undefined || header === '') throw invalidToken('missing bearer token', false);
  if (header.length > MAX_TOKEN_LENGTH + 64) throw invalidToken('token too long', true);
  const match = BEARER.exec(header);
  if (match === null) {
    const sent = /^bearer +\S/i.test(header);
    throw invalidToken(sent ? 'malformed token' : 'missing bearer token', sent);
  }
  const token = match[1] as string;
  if (token.length > MAX_TOKEN_LENGTH) throw invalidToken('token too long', true);
  return token;
}

/** Seconds a client should wait before retrying when the keys could not be fetched. */
export const KEYS_RETRY_AFTER = 5;

/** Who a verified token names. */
interface Identity {
  appId: string;
  jti: string | null;
  /** The scopes its `scope` and `scp` claims grant (see scopesOf). */
  scopes: readonly string[];
}

/** How long a verified token is taken on trust without verifying it again. */
export const VERIFIED_TOKEN_TTL_MS = 60_000;
const VERIFIED_TOKENS_MAX = 1000;

/**
 * Tokens verified recently, by their exact text, per configuration (so per isolate): a client
 * sends the same token for its whole lifetime, and verifying it again (parse, signature, claims)
 * is most of authentication's cost. An entry lasts until the token expires (or exceeds its
 * maximum age), and never longer than VERIFIED_TOKEN_TTL_MS; the oldest entry makes room.
 */
const verifiedTokens = new WeakMap<AuthConfig, Map<string, Identity & { until: number }>>();

function rememberVerified(config: AuthConfig, token: string, identity: Identity, payload: JWTPayload) {
  const tolerance = config.clockTolerance * 1000;
  let until = Math.min((payload.exp as number) * 1000 + tolerance, Date.now() + VERIFIED_TOKEN_TTL_MS);
  if (config.maxTokenAge !== undefined && payload.iat !== undefined) {
    until = Math.min(until, (payload.iat + config.maxTokenAge) * 1000 + tolerance);
  }
  let cache = verifiedTokens.get(config);
  if (cache === undefined) {
    cache = new Map();
    verifiedTokens.set(config, cache);
  }
  if (cache.size >= VERIFIED_TOKENS_MAX) cache.delete(cache.keys().next().value as string);
  cache.set(token, { ...identity, until });
}

function recallVerified(config: AuthConfig, token: string): Identity | undefined {
  const cache = verifiedTokens.get(config);
  const entry = cache?.get(token);
  if (entry === undefined) return undefined;
  if (Date.now() < entry.until) return entry;
  cache?.delete(token);
  return undefined;
}

/** Verifies the JWT (or recalls it, verified recently) and returns who it names. */
export async function verifyToken(token: string, config: AuthConfig): Promise<Identity> {
  const known = recallVerified(config, token);
  if (known !== undefined) return known;
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, config.keys.resolve, {
      algorithms: config.keys.algorithms,
      issuer: config.issuer,
      audience: config.audience,
      typ: config.typ,
      maxTokenAge: config.maxTokenAge,
      requiredClaims: ['exp'],
      clockTolerance: config.clockTolerance,
    }));
  } catch (err) {
    if (err instanceof KeysUnavailable) {
      throw retryLater(503, 'token keys unavailable', KEYS_RETRY_AFTER, err.cause);
    }
    if (err instanceof errors.JWTExpired) throw invalidToken('token expired', true, err);
    if (err instanceof errors.JOSEError) throw invalidToken('token invalid', true, err);
    throw err;
  }
  // jose takes any JSON number as a time, and `1e400` parses to Infinity: a token that never
  // expires (and would stay in the cache below). Every time claim must be a finite number.
  if ([payload.exp, payload.nbf, payload.iat].some((t) => t !== undefined && !Number.isFinite(t))) {
    throw invalidToken('token invalid', true);
  }
  // jose checks `iat` only against a maximum age; a token issued in the future is not valid yet.
  if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + config.clockTolerance) {
    throw invalidToken('token invalid', true);
  }
  const appId = payload[config.appClaim];
  if (typeof appId !== 'string' || appId === '') throw invalidToken('token names no application', true);
  if (!isAppId(appId)) throw invalidToken('token application claim has control characters or lone surrogates', true);
  // Scopes that cannot be read are never taken for none (which would be every right).
  const scopes = scopesOf(payload);
  if (scopes === null) throw invalidToken('token scope claim is not a list of scopes', true);
  const identity = { appId, jti: typeof payload.jti === 'string' ? payload.jti : null, scopes };
  rememberVerified(config, token, identity, payload);
  return identity;
}

/**
 * A middleware that rejects the request unless the `Authorization` value that `sent` finds in it
 * carries a valid token; it sets `appId`, `jti` and `scopes` on the context.
 */
const authenticateWith =
  (sent: (c: Context<AppEnv>) => string | undefined): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    const config = await authConfig(c.env);
    let identity: Identity;
    try {
      identity = await verifyToken(bearerToken(sent(c)), config);
    } catch (err) {
      if (err instanceof ApiFailure && err.options.code === Code.invalidToken) throw await authFailure(c, err);
      throw err;
    }
    const { appId, jti, scopes } = identity;
    c.set('appId', appId);
    c.set('jti', jti);
    c.set('scopes', scopes);
    await next();
  };

/** Rejects the request unless its `Authorization` header carries a valid token. */
export const authenticate = authenticateWith((c) => c.req.header('authorization'));

/** The token of a `Sec-WebSocket-Protocol` list's `bearer.<token>` entry, as an `Authorization` value. */
export function protocolBearer(protocols: string | undefined): string | undefined {
  const entry = protocols
    ?.split(',')
    .map((p) => p.trim())
    .find((p) => p.startsWith(BEARER_PROTOCOL));
  return entry === undefined ? undefined : `Bearer ${entry.slice(BEARER_PROTOCOL.length)}`;
}

/**
 * For a WebSocket upgrade: the token of its `Authorization` header or, from a browser, of its
 * `bearer.<token>` subprotocol, verified by the same rules.
 */
export const authenticateSocket = authenticateWith(
  (c) => c.req.header('authorization') ?? protocolBearer(c.req.header('sec-websocket-protocol')),
);

/**
 * After `authenticate`: rejects a valid token whose scopes lack `scope` with 403 and the RFC 6750
 * `insufficient_scope` challenge (an application's ordinary token can never publish).
 */
export const requireScope =
  (scope: string): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    if (!c.get('scopes').includes(scope)) throw insufficientScope(scope);
    await next();
  };

/** 403 with the RFC 6750 `insufficient_scope` challenge naming the scope the operation needs. */
const insufficientScope = (scope: string) =>
  new ApiFailure(403, `token lacks the ${scope} scope`, {
    headers: { 'www-authenticate': `${REALM}, error="insufficient_scope", scope="${scope}"` },
  });

/**
 * After `authenticate`, on every operation that changes something, and on reading a signing
 * secret (whoever holds one can sign as the service): a read-only token, whose scopes name
 * webhooks:read and not webhooks:write, is refused with 403 and the `insufficient_scope` challenge
 * naming webhooks:write. Tokens without either scope keep every right (the tokens applications
 * had before scopes).
 */
export const requireWrite: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (isReadOnly(c.get('scopes'))) throw insufficientScope(WRITE_SCOPE);
  await next();
};
