import { ConfigError } from '../core/errors';
import { perIsolate, setting } from '../core/settings';
import { parseAlgorithms, publicKeys, remoteKeys, secretKeys, type VerificationKeys } from './keys';

/** What token verification needs, prepared once per isolate. */
export interface AuthConfig {
  keys: VerificationKeys;
  issuer?: string;
  audience?: string;
  appClaim: string;
  typ?: string;
  clockTolerance: number;
  maxTokenAge?: number;
}

/** The claim that names the calling application: JWT_APP_CLAIM, `sub` by default. */
export const appClaim = (env: CloudflareBindings): string => setting(env, 'JWT_APP_CLAIM') ?? 'sub';

/** Default seconds of clock skew allowed on `exp`, `nbf` and `iat`. */
export const DEFAULT_CLOCK_TOLERANCE = 5;

/**
 * The authentication settings of `env`, checked and with the keys imported, once per isolate.
 */
export function authConfig(env: CloudflareBindings): Promise<AuthConfig> {
  return perIsolate(env, 'auth', () => readAuthConfig(env));
}

type Setting =
  | 'JWT_SECRET'
  | 'JWT_PUBLIC_KEY'
  | 'JWT_JWKS_URL'
  | 'JWT_ALGORITHMS'
  | 'JWT_ISSUER'
  | 'JWT_AUDIENCE'
  | 'JWT_APP_CLAIM'
  | 'JWT_TYP'
  | 'JWT_CLOCK_TOLERANCE'
  | 'JWT_MAX_TOKEN_AGE';

function seconds(env: CloudflareBindings, name: Setting, max: number): number | undefined {
  const value = setting(env, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) > max) {
    throw new ConfigError(name, `must be a whole number of seconds from 0 to ${max}`);
  }
  return Number(value);
}

function jwksUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError('JWT_JWKS_URL', 'is not a URL');
  }
  // Plain http only to this machine (local runs); keys must not travel unprotected.
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new ConfigError('JWT_JWKS_URL', 'must be an https URL (http only for localhost, 127.0.0.1 or [::1])');
  }
  return url;
}

function verificationKeys(env: CloudflareBindings): Promise<VerificationKeys> | VerificationKeys {
  // The secret is used byte for byte (not trimmed); empty means unset.
  const secret = typeof env.JWT_SECRET === 'string' && env.JWT_SECRET !== '' ? env.JWT_SECRET : undefined;
  const publicKey = setting(env, 'JWT_PUBLIC_KEY');
  const url = setting(env, 'JWT_JWKS_URL');
  const algorithms = parseAlgorithms(setting(env, 'JWT_ALGORITHMS'));
  if (secret !== undefined && (publicKey !== undefined || url !== undefined)) {
    throw new ConfigError('JWT_SECRET', 'cannot be combined with JWT_PUBLIC_KEY or JWT_JWKS_URL: set one key source');
  }
  if (publicKey !== undefined && url !== undefined) {
    throw new ConfigError('JWT_JWKS_URL', 'cannot be combined with JWT_PUBLIC_KEY: set one key source');
  }
  if (secret !== undefined) return secretKeys(secret, algorithms);
  if (publicKey !== undefined) return publicKeys(publicKey, algorithms);
  if (url !== undefined) return remoteKeys(jwksUrl(url), algorithms);
  throw new ConfigError(
    'JWT_SECRET',
    'no verification key is configured: set JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL',
  );
}

async function readAuthConfig(env: CloudflareBindings): Promise<AuthConfig> {
  return {
    keys: await verificationKeys(env),
    issuer: setting(env, 'JWT_ISSUER'),
    audience: setting(env, 'JWT_AUDIENCE'),
    appClaim: appClaim(env),
    typ: setting(env, 'JWT_TYP'),
    clockTolerance: seconds(env, 'JWT_CLOCK_TOLERANCE', 300) ?? DEFAULT_CLOCK_TOLERANCE,
    maxTokenAge: seconds(env, 'JWT_MAX_TOKEN_AGE', 31_536_000),
  };
}
