// Google Pub/Sub (topics.publish): the exact body as the message's data, the signature headers as
// its attributes. Its bearer token comes from the service account's key (a JWT bearer grant,
// RS256, signed with jose) and is reused until a minute before it expires.
import { importPKCS8, SignJWT } from 'jose';
import { toBase64 } from '../../core/base64';
import { rebased } from '../../core/destinations';
import { type AttemptResult, attempt, keptText } from '../attempt';
import type { OpenDestination, Provider, SendOptions } from './provider';

const SCOPE = 'https://www.googleapis.com/auth/pubsub';
const REUSE_MARGIN_MS = 60_000;
const TOKENS_MAX = 1000;
const encoder = new TextEncoder();

interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  token_uri: string;
  private_key_id?: string;
}

/**
 * Tokens by key (its sealed form's text as opened: one entry per key), in the isolate of the
 * endpoint's object that sends with them.
 */
const tokens = new Map<string, { token: string; expires: number }>();

/** The token request failed: its attempt's result (the token endpoint's status and reply, never a token). */
class TokenRefused extends Error {
  constructor(readonly result: AttemptResult) {
    super('token refused');
  }
}

function accessToken(destination: OpenDestination, options: SendOptions): Promise<string> {
  const keyText = destination.credentials.service_account_key as string;
  const cached = tokens.get(keyText);
  if (cached !== undefined && cached.expires - REUSE_MARGIN_MS > Date.now()) return Promise.resolve(cached.token);
  // The pass's concurrent attempts wait for one request (see SendOptions.shared).
  const id = `gcp-token ${keyText}`;
  let asked = options.shared.get(id);
  if (asked === undefined) {
    asked = newToken(keyText, options).finally(() => options.shared.delete(id));
    options.shared.set(id, asked);
  }
  return asked;
}

/** A token for the key from its token endpoint, kept for reuse; a refusal throws TokenRefused. */
async function newToken(keyText: string, { fetcher, timeoutMs, bases }: SendOptions): Promise<string> {
  const key = JSON.parse(keyText) as ServiceAccountKey;
  const now = Math.floor(Date.now() / 1000);
  let signingKey: CryptoKey;
  try {
    signingKey = await importPKCS8(key.private_key, 'RS256');
  } catch {
    // A key that cannot sign fails every attempt as an auth failure would, toward auto-disable.
    throw new TokenRefused({
      status: null,
      error: 'rejected',
      body: "the service account key's private_key is not an RSA key",
      retryAfter: null,
      durationMs: 0,
    });
  }
  const assertion = await new SignJWT({ scope: SCOPE })
    .setProtectedHeader(
      key.private_key_id === undefined
        ? { alg: 'RS256', typ: 'JWT' }
        : { alg: 'RS256', typ: 'JWT', kid: key.private_key_id },
    )
    .setIssuer(key.client_email)
    .setAudience(key.token_uri)
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(signingKey);
  const started = Date.now();
  const form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion });
  let res: Response;
  try {
    res = await fetcher(rebased(key.token_uri, 'gcp_oauth', bases), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const timeout = err instanceof Error && err.name === 'TimeoutError';
    throw new TokenRefused({
      status: null,
      error: timeout ? 'timeout' : 'connection',
      body: null,
      retryAfter: null,
      durationMs: Date.now() - started,
    });
  }
  const text = await res.text();
  const reply = (() => {
    try {
      return JSON.parse(text) as { access_token?: unknown; expires_in?: unknown };
    } catch {
      return {};
    }
  })();
  if (!res.ok || typeof reply.access_token !== 'string') {
    // The token endpoint's own error (never a token: a refusal carries none; nor the assertion,
    // which buys one until it expires, should the reply quote the request).
    const body = typeof reply.access_token === 'string' ? null : keptText(encoder.encode(text), [assertion]);
    throw new TokenRefused({
      status: res.ok ? 502 : res.status,
      error: null,
      body,
      retryAfter: null,
      durationMs: Date.now() - started,
    });
  }
  const seconds = typeof reply.expires_in === 'number' ? reply.expires_in : 3600;
  if (tokens.size >= TOKENS_MAX) tokens.delete(tokens.keys().next().value as string);
  tokens.set(keyText, { token: reply.access_token, expires: Date.now() + seconds * 1000 });
  return reply.access_token;
}

export const pubSubProvider: Provider = {
  async send(destination, message, options) {
    let token: string;
    try {
      token = await accessToken(destination, options);
    } catch (err) {
      if (err instanceof TokenRefused) return err.result;
      throw err;
    }
    const topic = destination.fields.topic as string;
    const published: Record<string, unknown> = { data: toBase64(message.body), attributes: message.signature };
    if (message.fifo) published.orderingKey = message.webhookId;
    const url = rebased(`https://pubsub.googleapis.com/v1/${topic}:publish`, 'gcp_pubsub', options.bases);
    const body = encoder.encode(JSON.stringify({ messages: [published] }));
    const result = await attempt(
      {
        url,
        body,
        headers: { authorization: `Bearer ${token}` },
        timeoutMs: options.timeoutMs,
        // What it carries: the token (the key itself never leaves, only the assertion for the token).
        secrets: [token],
      },
      options.fetcher,
    );
    // A token revoked before its time: asked for again on the next attempt.
    if (result.status === 401) tokens.delete(destination.credentials.service_account_key as string);
    return result;
  },
};
