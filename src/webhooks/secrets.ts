// Webhooks' signing secrets (Standard Webhooks): `whsec_` + the base64 of 32 random bytes, one per
// webhook, kept encrypted at rest with AES-256-GCM under the Worker secret WEBHOOK_SECRET_KEY.
import { fromBase64, toBase64 } from '../core/base64';
import { ConfigError } from '../core/errors';
import { perIsolate } from '../core/settings';

/** What every signing secret starts with. */
export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
const encoder = new TextEncoder();

/** A new signing secret: `whsec_` + the padded base64 of 32 random bytes (44 characters). */
export function newSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

const VERSION = 'v1.';
const IV_BYTES = 12;

/**
 * The AES-256-GCM key of WEBHOOK_SECRET_KEY (the base64 of 32 bytes), imported once per isolate.
 * Missing or malformed: a ConfigError naming the setting (the operation fails closed).
 */
export function secretKey(env: CloudflareBindings): Promise<CryptoKey> {
  return perIsolate(env, 'WEBHOOK_SECRET_KEY', () =>
    importSecretKey((env as { WEBHOOK_SECRET_KEY?: unknown }).WEBHOOK_SECRET_KEY),
  );
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
