// Who calls: application names and the tokens they present.
import { env } from 'cloudflare:test';
import { SignJWT } from 'jose';
import { expect } from 'vitest';

/** The time now in whole seconds, as JWT claims give it. */
export const now = () => Math.floor(Date.now() / 1000);

/**
 * A token valid for the test configuration, naming `appId`. `claims` entries override the
 * defaults; an entry set to undefined removes that claim. Signed HS256 with the test secret unless
 * `key` and `alg` say otherwise.
 */
export async function tokenFor(
  appId: string,
  claims: Record<string, unknown> = {},
  {
    secret = env.JWT_SECRET,
    key,
    alg = 'HS256',
    header = {},
  }: { secret?: string; key?: CryptoKey | Uint8Array; alg?: string; header?: Record<string, unknown> } = {},
): Promise<string> {
  const payload: Record<string, unknown> = {
    sub: appId,
    iss: env.JWT_ISSUER,
    aud: env.JWT_AUDIENCE,
    iat: now(),
    exp: now() + 300,
    ...claims,
  };
  for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
  return new SignJWT(payload)
    .setProtectedHeader({ alg, typ: 'JWT', ...header })
    .sign(key ?? new TextEncoder().encode(secret));
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A platform service's token: it may publish events. */
export const platformToken = (claims: Record<string, unknown> = {}) =>
  tokenFor('platform-service', { scope: 'events:publish', ...claims });

/** The headers of a request by `app`: its token as a bearer. */
export const auth = async (app: string) => bearer(await tokenFor(app));

let seq = 0;

/**
 * An application name no other test has used: the test file's name and a counter
 * (`webhook-read-app-3` in webhook-read.test.ts). Storage is shared by the tests of a file, so each
 * test has an application, and its webhooks, to itself.
 */
export function freshApp(): string {
  const file = expect.getState().testPath?.split('/').pop() ?? 'test';
  return `${file.replace(/\.test\.ts$/, '')}-app-${++seq}`;
}
