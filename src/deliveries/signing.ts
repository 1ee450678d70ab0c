// Standard Webhooks signing (https://www.standardwebhooks.com): each webhook has its own secret,
// `whsec_` + base64 of 32 random bytes, and every request carries
// `webhook-signature: v1,<base64 HMAC-SHA256(secret bytes, "{id}.{timestamp}.{body}")>`.
// Secrets are kept encrypted at rest with AES-256-GCM under the Worker secret WEBHOOK_SECRET_KEY.
import { ConfigError } from '../http/envelope';

const PREFIX = 'whsec_';
const SECRET_BYTES = 32;
const encoder = new TextEncoder();

export const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
export const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** A new signing secret: `whsec_` + the padded base64 of 32 random bytes (44 characters). */
export function newSecret(): string {
  return PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

/** The HMAC key of a `whsec_` secret. */
export function signingKey(secret: string): Promise<CryptoKey> {
  const bytes = fromBase64(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret);
  return crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

/**
 * The `webhook-signature` value: one `v1,<base64>` per key, space-separated, in the order given
 * (during a rotation: the new secret's, then the previous one's).
 */
export async function signature(keys: CryptoKey[], id: string, timestamp: number, body: Uint8Array): Promise<string> {
  const head = encoder.encode(`${id}.${timestamp}.`);
  const content = new Uint8Array(head.byteLength + body.byteLength);
  content.set(head);
  content.set(body, head.byteLength);
  const signatures = await Promise.all(
    keys.map(async (key) => `v1,${toBase64(new Uint8Array(await crypto.subtle.sign('HMAC', key, content)))}`),
  );
  return signatures.join(' ');
}

// ---- encryption at rest -------------------------------------------------------------------------

const VERSION = 'v1.';
const IV_BYTES = 12;
const keys = new WeakMap<object, Promise<CryptoKey>>();

/**
 * The AES-256-GCM key of WEBHOOK_SECRET_KEY (the base64 of 32 bytes), imported once per isolate.
 * Missing or malformed: a ConfigError naming the setting (the operation fails closed).
 */
export function secretKey(env: CloudflareBindings): Promise<CryptoKey> {
  let key = keys.get(env);
  if (key === undefined) {
    key = importSecretKey((env as { WEBHOOK_SECRET_KEY?: unknown }).WEBHOOK_SECRET_KEY);
    keys.set(env, key);
    // A failed import is not kept: the next request reads the setting again.
    key.catch(() => keys.delete(env));
  }
  return key;
}

async function importSecretKey(value: unknown): Promise<CryptoKey> {
  let bytes: Uint8Array | undefined;
  if (typeof value === 'string' && value.trim() !== '') {
    try {
      bytes = fromBase64(value.trim());
    } catch {
      bytes = undefined;
    }
  }
  if (bytes?.byteLength !== 32) {
    throw new ConfigError(
      'WEBHOOK_SECRET_KEY',
      value === undefined || value === '' ? 'is not set' : 'must be the base64 of 32 bytes',
    );
  }
  return crypto.subtle.importKey('raw', bytes, 'AES-GCM', false, ['encrypt', 'decrypt']);
}

/** A secret encrypted for storage: `v1.` + base64(IV || ciphertext and tag). */
export async function encryptSecret(key: CryptoKey, secret: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, encoder.encode(secret)));
  const out = new Uint8Array(IV_BYTES + sealed.byteLength);
  out.set(iv);
  out.set(sealed, IV_BYTES);
  return VERSION + toBase64(out);
}

/** The secret of a stored value; throws when it was not sealed with this key. */
export async function decryptSecret(key: CryptoKey, stored: string): Promise<string> {
  if (!stored.startsWith(VERSION)) throw new Error('unknown secret encoding');
  const bytes = fromBase64(stored.slice(VERSION.length));
  const plain = await crypto.subtle.decrypt(
    { name: 'AES-GCM', iv: bytes.subarray(0, IV_BYTES) },
    key,
    bytes.subarray(IV_BYTES),
  );
  return new TextDecoder().decode(plain);
}

/** A new secret and its stored form. */
export async function sealedNewSecret(env: CloudflareBindings): Promise<{ secret: string; sealed: string }> {
  const secret = newSecret();
  return { secret, sealed: await encryptSecret(await secretKey(env), secret) };
}
