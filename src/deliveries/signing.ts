// Standard Webhooks signatures (https://www.standardwebhooks.com): every request carries
// `webhook-signature: v1,<base64 HMAC-SHA256(secret bytes, "{id}.{timestamp}.{body}")>`, one per
// signing secret.
import { fromBase64, toBase64 } from '../core/base64';
import { SECRET_PREFIX } from '../webhooks/secrets';

const encoder = new TextEncoder();

/** The HMAC key of a `whsec_` secret. */
export function signingKey(secret: string): Promise<CryptoKey> {
  const bytes = fromBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
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
