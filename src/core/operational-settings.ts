// The platform's operational endpoint: OPERATIONAL_WEBHOOK_URL receives every application's
// operational events, signed with OPERATIONAL_WEBHOOK_SECRET (`whsec_...`). Read and checked once
// per isolate; an invalid pair is a ConfigError naming the setting, and nothing is sent there
// until it is fixed (its deliveries wait).
import { fromBase64 } from './base64';
import { ConfigError } from './errors';
import { perIsolate, setting } from './settings';

export interface OperationalEndpoint {
  url: string;
  /** The signing secret as set: `whsec_` + base64. */
  secret: string;
}

const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

/** The name of the endpoint object that holds and sends the platform's operational deliveries. */
export const PLATFORM_ENDPOINT = 'operational';

/** Whether OPERATIONAL_WEBHOOK_URL is set: the platform wants every operational event. */
export const operationalWanted = (env: object) => setting(env, 'OPERATIONAL_WEBHOOK_URL') !== undefined;

/** The checked pair, or null when OPERATIONAL_WEBHOOK_URL is unset. Throws ConfigError when invalid. */
export function operationalEndpoint(env: object): OperationalEndpoint | null {
  return perIsolate(env, 'operational-endpoint', () => readOperational(env));
}

function readOperational(env: object): OperationalEndpoint | null {
  const url = setting(env, 'OPERATIONAL_WEBHOOK_URL');
  const secret = setting(env, 'OPERATIONAL_WEBHOOK_SECRET');
  if (url === undefined) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('OPERATIONAL_WEBHOOK_URL', 'must be an absolute http(s) URL');
  }
  if ((parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || parsed.username !== '' || parsed.password !== '')
    throw new ConfigError('OPERATIONAL_WEBHOOK_URL', 'must be an absolute http(s) URL without credentials');
  if (secret === undefined)
    throw new ConfigError('OPERATIONAL_WEBHOOK_SECRET', 'is required with OPERATIONAL_WEBHOOK_URL');
  let bytes = 0;
  try {
    bytes = SECRET.test(secret) ? fromBase64(secret.slice(6)).byteLength : 0;
  } catch {
    bytes = 0;
  }
  if (bytes < 24 || bytes > 64)
    throw new ConfigError('OPERATIONAL_WEBHOOK_SECRET', 'must be whsec_ followed by the base64 of 24 to 64 bytes');
  return { url: parsed.href, secret };
}
