// Webhooks' signing secrets (Standard Webhooks): `whsec_` + the base64 of 32 random bytes, one per
// webhook, kept sealed at rest with AES-256-GCM under the Worker's secret keys (the key ring):
// WEBHOOK_SECRET_KEYS, `<id>:<base64 of 32 bytes>` space-separated, the first seals and every one
// opens; WEBHOOK_SECRET_KEY, the single key of releases before the ring, is the key `default`.
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

/** The id of the key in WEBHOOK_SECRET_KEY. */
export const DEFAULT_KEY_ID = 'default';
/** What a key id may be: it is stored in front of every secret it seals. */
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
/** The most keys the ring holds. */
const MOST_KEYS = 10;
const KEYS = 'WEBHOOK_SECRET_KEYS';
const KEY = 'WEBHOOK_SECRET_KEY';

/**
 * The keys that open stored signing secrets, by id, and the one that seals new ones (the first of
 * WEBHOOK_SECRET_KEYS, else WEBHOOK_SECRET_KEY's).
 */
export interface SecretKeys {
  sealingId: string;
  byId: ReadonlyMap<string, CryptoKey>;
}

/**
 * The key ring, imported once per isolate. Missing or malformed: a ConfigError naming the setting
 * (the operation fails closed).
 */
export function secretKeys(env: CloudflareBindings): Promise<SecretKeys> {
  return perIsolate(env, KEYS, () => {
    const settings = env as { WEBHOOK_SECRET_KEYS?: unknown; WEBHOOK_SECRET_KEY?: unknown };
    return importKeys(settings.WEBHOOK_SECRET_KEYS, settings.WEBHOOK_SECRET_KEY);
  });
}

const text = (value: unknown) => (typeof value === 'string' ? value.trim() : '');

/** The 32 bytes of one key's base64, or a ConfigError of `setting`. */
function keyBytes(setting: string, base64: string, what: string): Uint8Array {
  let bytes: Uint8Array | undefined;
  try {
    bytes = fromBase64(base64);
  } catch {
    bytes = undefined;
  }
  if (bytes?.byteLength !== 32) throw new ConfigError(setting, `${what} must be the base64 of 32 bytes`);
  return bytes;
}

/** Every key of the ring, in order: [id, bytes]. */
function parseKeyRing(keys: unknown, single: unknown): [string, Uint8Array][] {
  const ring: [string, Uint8Array][] = [];
  for (const entry of text(keys) === '' ? [] : text(keys).split(/\s+/)) {
    const colon = entry.indexOf(':');
    const id = colon === -1 ? '' : entry.slice(0, colon);
    if (!KEY_ID.test(id)) {
      throw new ConfigError(
        KEYS,
        'must be keys "<id>:<base64 of 32 bytes>" with ids of 1 to 32 letters, digits, _ or -',
      );
    }
    if (ring.some(([other]) => other === id)) throw new ConfigError(KEYS, `names key ${id} twice`);
    ring.push([id, keyBytes(KEYS, entry.slice(colon + 1), `key ${id}`)]);
  }
  if (text(single) !== '') {
    const bytes = keyBytes(KEY, text(single), 'it');
    const named = ring.find(([id]) => id === DEFAULT_KEY_ID);
    if (named === undefined) ring.push([DEFAULT_KEY_ID, bytes]);
    else if (toBase64(named[1]) !== toBase64(bytes)) {
      throw new ConfigError(KEYS, `key ${DEFAULT_KEY_ID} is not the key of ${KEY}, which is also set`);
    }
  }
  if (ring.length === 0) throw new ConfigError(KEYS, `is not set (nor is ${KEY})`);
  if (ring.length > MOST_KEYS) throw new ConfigError(KEYS, `holds more than ${MOST_KEYS} keys`);
  return ring;
}

async function importKeys(keys: unknown, single: unknown): Promise<SecretKeys> {
  const ring = parseKeyRing(keys, single);
  const byId = new Map<string, CryptoKey>();
  for (const [id, bytes] of ring) {
    byId.set(id, await crypto.subtle.importKey('raw', bytes, 'AES-GCM', false, ['encrypt', 'decrypt']));
  }
  const [[sealingId]] = ring as [[string, Uint8Array]];
  return { sealingId, byId };
}

// Stored forms: `v1.` + base64(IV || ciphertext and tag) under the key `default` (the form of
// releases before the ring, which they still read); `v2.<id>.` + the same under any other key.
const V1 = 'v1.';
const V2 = 'v2.';
const IV_BYTES = 12;

/** What a stored secret starts with when the key `keyId` sealed it. */
export const sealedPrefix = (keyId: string) => (keyId === DEFAULT_KEY_ID ? V1 : `${V2}${keyId}.`);

/** The id of the key that sealed a stored secret. */
export function sealedWith(stored: string): string {
  if (stored.startsWith(V1)) return DEFAULT_KEY_ID;
  const end = stored.indexOf('.', V2.length);
  if (!stored.startsWith(V2) || end === -1) throw new Error('unknown secret encoding');
  return stored.slice(V2.length, end);
}

/** A secret sealed for storage with the ring's sealing key. */
export async function sealSecret(keys: SecretKeys, secret: string): Promise<string> {
  const key = keys.byId.get(keys.sealingId) as CryptoKey;
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, encoder.encode(secret)));
  const out = new Uint8Array(IV_BYTES + sealed.byteLength);
  out.set(iv);
  out.set(sealed, IV_BYTES);
  return sealedPrefix(keys.sealingId) + toBase64(out);
}

/** A stored secret that no key of the ring opens: the configuration lacks the key `keyId`. */
export class UnopenedSecret extends ConfigError {
  constructor(
    readonly keyId: string,
    message: string,
  ) {
    super(KEYS, message);
  }
}

/**
 * The secret of a stored value. A value that no key of the ring opens is an UnopenedSecret naming
 * the key id that sealed it (the operation fails closed).
 */
export async function openSecret(keys: SecretKeys, stored: string): Promise<string> {
  const keyId = sealedWith(stored);
  const key = keys.byId.get(keyId);
  if (key === undefined) throw new UnopenedSecret(keyId, `has no key ${keyId}, which sealed a stored signing secret`);
  const bytes = fromBase64(stored.slice(sealedPrefix(keyId).length));
  let plain: ArrayBuffer;
  try {
    plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: bytes.subarray(0, IV_BYTES) },
      key,
      bytes.subarray(IV_BYTES),
    );
  } catch {
    throw new UnopenedSecret(keyId, `key ${keyId} does not open a stored signing secret sealed with key ${keyId}`);
  }
  return new TextDecoder().decode(plain);
}

/** A new secret and its stored form. */
export async function sealedNewSecret(env: CloudflareBindings): Promise<{ secret: string; sealed: string }> {
  const secret = newSecret();
  return { secret, sealed: await sealSecret(await secretKeys(env), secret) };
}
