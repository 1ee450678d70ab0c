import { ApiFailure } from './envelope';

/** What token verification needs, prepared once per isolate. */
export interface AuthConfig {
  key: CryptoKey;
  algorithms: string[];
  issuer?: string;
  audience?: string;
  appClaim: string;
  clockTolerance: number;
}

/** A missing or contradictory setting: the service fails closed (500) and logs `setting`. */
export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Seconds of clock skew allowed on `exp`, `nbf` and `iat`. */
const CLOCK_TOLERANCE = 5;

const cache = new WeakMap<object, Promise<AuthConfig>>();

/**
 * The authentication settings of `env`, checked and with the key imported, once per isolate:
 * the Workers runtime hands the same `env` object to every request of an isolate.
 */
export function authConfig(env: CloudflareBindings): Promise<AuthConfig> {
  let config = cache.get(env);
  if (config === undefined) {
    config = readAuthConfig(env);
    cache.set(env, config);
  }
  return config;
}

function setting(env: CloudflareBindings, name: keyof CloudflareBindings): string | undefined {
  const value = (env as unknown as Record<string, unknown>)[name];
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

async function readAuthConfig(env: CloudflareBindings): Promise<AuthConfig> {
  // The secret is used as given (not trimmed): its bytes are the key.
  const secret = typeof env.JWT_SECRET === 'string' && env.JWT_SECRET !== '' ? env.JWT_SECRET : undefined;
  if (secret === undefined) {
    throw new ConfigError('JWT_SECRET', 'no verification key is configured: set the JWT_SECRET secret');
  }
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  );
  return {
    key,
    algorithms: ['HS256'],
    issuer: setting(env, 'JWT_ISSUER'),
    audience: setting(env, 'JWT_AUDIENCE'),
    appClaim: setting(env, 'JWT_APP_CLAIM') ?? 'sub',
    clockTolerance: CLOCK_TOLERANCE,
  };
}

/** Turns a configuration error into the fail-closed reply. */
export function misconfigured(err: ConfigError): ApiFailure {
  return new ApiFailure(500, `configuration error: ${err.setting}: ${err.message}`, { cause: err });
}
