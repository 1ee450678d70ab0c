// Verification keys from each kind of setting, imported once (per isolate) and chosen per token by
// its `alg` and `kid` only: `jku`, `x5u`, `x5c` and embedded `jwk` headers are never looked at.
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors,
  importJWK,
  importSPKI,
  type JSONWebKeySet,
  type JWK,
  type JWTHeaderParameters,
} from 'jose';
import { ConfigError } from '../core/errors';

/** Picks the key for a token's protected header. */
export type KeyResolver = (header: JWTHeaderParameters) => Promise<CryptoKey>;

export interface VerificationKeys {
  /** The allow-list handed to jose: a token with any other `alg` is invalid. */
  algorithms: string[];
  resolve: KeyResolver;
}

/** The key source cannot be reached or read right now: the token cannot be verified (503). */
export class KeysUnavailable extends Error {
  constructor(cause: unknown) {
    super('verification keys unavailable', { cause });
    this.name = 'KeysUnavailable';
  }
}

const HMAC = ['HS256', 'HS384', 'HS512'];
const ASYMMETRIC = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

interface KeyEntry {
  kid?: string;
  alg: string;
  key: CryptoKey;
}

/** Chooses among imported keys: same `alg`, and the same `kid` when both sides name one. */
function localResolver(entries: KeyEntry[]): KeyResolver {
  return async (header) => {
    const matches = entries.filter(
      (e) => e.alg === header.alg && (e.kid === undefined || header.kid === undefined || e.kid === header.kid),
    );
    if (matches.length === 1) return (matches[0] as KeyEntry).key;
    if (matches.length === 0) throw new errors.JWKSNoMatchingKey();
    throw new errors.JWKSMultipleMatchingKeys();
  };
}

/** Parses JWT_ALGORITHMS: undefined when unset; every name must be one this service verifies. */
export function parseAlgorithms(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const list = [
    ...new Set(
      value
        .split(',')
        .map((a) => a.trim())
        .filter((a) => a !== ''),
    ),
  ];
  for (const alg of list) {
    if (!HMAC.includes(alg) && !ASYMMETRIC.includes(alg)) {
      throw new ConfigError('JWT_ALGORITHMS', `unsupported algorithm "${alg}" (never "none")`);
    }
  }
  if (list.length === 0) throw new ConfigError('JWT_ALGORITHMS', 'lists no algorithm');
  return list;
}

/** JWT_SECRET: an HMAC key for each allowed algorithm (default HS256). */
export async function secretKeys(secret: string, allowed: string[] | undefined): Promise<VerificationKeys> {
  const algorithms = allowed ?? ['HS256'];
  const wrong = algorithms.find((alg) => !HMAC.includes(alg));
  if (wrong !== undefined) {
    throw new ConfigError('JWT_ALGORITHMS', `${wrong} cannot be used with JWT_SECRET (HS256, HS384, HS512 only)`);
  }
  const bytes = new TextEncoder().encode(secret);
  const entries = await Promise.all(
    algorithms.map(async (alg) => ({
      alg,
      key: await crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: `SHA-${alg.slice(2)}` }, false, [
        'verify',
      ]),
    })),
  );
  return { algorithms, resolve: localResolver(entries) };
}

/** An algorithm with the names it goes by: Ed25519 signatures are "EdDSA" or (RFC 9864) "Ed25519". */
const withAliases = (alg: string): string[] => (alg === 'EdDSA' || alg === 'Ed25519' ? ['EdDSA', 'Ed25519'] : [alg]);

/** The algorithms a JWK is for: its own `alg`, else the one its key type implies. */
function jwkAlgorithms(jwk: JWK): string[] | undefined {
  if (typeof jwk.alg === 'string') return withAliases(jwk.alg);
  if (jwk.kty === 'RSA') return ['RS256'];
  if (jwk.kty === 'EC') {
    const alg = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' }[jwk.crv ?? ''];
    return alg === undefined ? undefined : [alg];
  }
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return withAliases('EdDSA');
  return undefined;
}

function checkPublicJwk(jwk: JWK, where: string) {
  if (typeof jwk !== 'object' || jwk === null || typeof jwk.kty !== 'string') {
    throw new ConfigError('JWT_PUBLIC_KEY', `${where} is not a JWK`);
  }
  if (jwk.kty === 'oct') throw new ConfigError('JWT_PUBLIC_KEY', `${where} is a secret key: use JWT_SECRET`);
  if ('d' in jwk || 'p' in jwk || 'k' in jwk) {
    throw new ConfigError('JWT_PUBLIC_KEY', `${where} holds private key material: configure the public key only`);
  }
}

async function importEntry(jwk: JWK, alg: string, where: string): Promise<KeyEntry> {
  try {
    const key = await importJWK(jwk, alg);
    return { kid: typeof jwk.kid === 'string' ? jwk.kid : undefined, alg, key: key as CryptoKey };
  } catch (err) {
    throw new ConfigError('JWT_PUBLIC_KEY', `${where} cannot be imported for ${alg}: ${(err as Error).message}`);
  }
}

/** One JWK: usable for its own algorithm only. */
async function jwkKeys(jwk: JWK, allowed: string[] | undefined): Promise<VerificationKeys> {
  checkPublicJwk(jwk, 'the JWK');
  const own = jwkAlgorithms(jwk);
  if (own === undefined) throw new ConfigError('JWT_PUBLIC_KEY', 'the JWK has no "alg" and an unsupported key type');
  const algorithms = allowed ?? own;
  const wrong = algorithms.find((alg) => !own.includes(alg));
  if (wrong !== undefined) throw new ConfigError('JWT_ALGORITHMS', `the JWK is for ${own.join('/')}, not ${wrong}`);
  const entries = await Promise.all(algorithms.map((alg) => importEntry(jwk, alg, 'the JWK')));
  return { algorithms, resolve: localResolver(entries) };
}

/** A JWK Set: several keys chosen by `kid`, for rotation. Keys not for signatures are skipped. */
async function jwkSetKeys(set: JSONWebKeySet, allowed: string[] | undefined): Promise<VerificationKeys> {
  const usable = set.keys.filter((jwk) => jwk.use === undefined || jwk.use === 'sig');
  if (usable.length === 0) throw new ConfigError('JWT_PUBLIC_KEY', 'the JWK Set has no signature key');
  const entries: KeyEntry[] = [];
  for (const [i, jwk] of usable.entries()) {
    const where = `key ${i} of the JWK Set`;
    checkPublicJwk(jwk, where);
    if (usable.length > 1 && typeof jwk.kid !== 'string') {
      throw new ConfigError('JWT_PUBLIC_KEY', `${where} has no "kid": every key of a set needs one`);
    }
    const algs = jwkAlgorithms(jwk);
    if (algs === undefined)
      throw new ConfigError('JWT_PUBLIC_KEY', `${where} has no "alg" and an unsupported key type`);
    for (const alg of algs) {
      if (allowed === undefined || allowed.includes(alg)) entries.push(await importEntry(jwk, alg, where));
    }
  }
  const algorithms = allowed ?? [...new Set(entries.map((e) => e.alg))];
  const orphan = algorithms.find((alg) => !entries.some((e) => e.alg === alg));
  if (orphan !== undefined) throw new ConfigError('JWT_ALGORITHMS', `no key of the JWK Set is for ${orphan}`);
  return { algorithms, resolve: localResolver(entries) };
}

// Tried in this order to find what a PEM key is, when JWT_ALGORITHMS does not say.
const PEM_CANDIDATES = ['RS256', 'ES256', 'ES384', 'ES512', 'EdDSA', 'PS256'];

/** A PEM public key (SPKI), also as one line with `\n` escapes. */
async function pemKeys(text: string, allowed: string[] | undefined): Promise<VerificationKeys> {
  const pem = text.replace(/\\n/g, '\n');
  if (!/-----BEGIN PUBLIC KEY-----/.test(pem)) {
    throw new ConfigError(
      'JWT_PUBLIC_KEY',
      'a PEM key must be "-----BEGIN PUBLIC KEY-----" (SPKI); private keys are refused',
    );
  }
  const tryImport = (alg: string) =>
    importSPKI(pem, alg).then(
      (key) => ({ alg, key }),
      () => null,
    );
  const entries: KeyEntry[] = [];
  let algorithms = allowed;
  if (algorithms === undefined) {
    for (const alg of PEM_CANDIDATES) {
      const entry = await tryImport(alg);
      if (entry !== null) {
        algorithms = withAliases(alg);
        entries.push(entry);
        break;
      }
    }
    if (algorithms === undefined) {
      throw new ConfigError('JWT_PUBLIC_KEY', 'the PEM key is not an RSA, EC (P-256/384/521) or Ed25519 public key');
    }
  }
  for (const alg of algorithms) {
    if (entries.some((e) => e.alg === alg)) continue;
    const entry = await tryImport(alg);
    if (entry === null) throw new ConfigError('JWT_ALGORITHMS', `the PEM key cannot verify ${alg}`);
    entries.push(entry);
  }
  return { algorithms, resolve: localResolver(entries) };
}

/** Public keys never verify HMAC: an allowed HS* algorithm would invite key confusion. */
function refuseHmac(allowed: string[] | undefined, keySource: string) {
  const hmac = allowed?.find((alg) => HMAC.includes(alg));
  if (hmac !== undefined) throw new ConfigError('JWT_ALGORITHMS', `${hmac} cannot be used with ${keySource}`);
}

/** JWT_PUBLIC_KEY: a PEM key, a JWK, or a JWK Set. */
export async function publicKeys(value: string, allowed: string[] | undefined): Promise<VerificationKeys> {
  refuseHmac(allowed, 'a public key');
  if (!value.startsWith('{')) return pemKeys(value, allowed);
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    throw new ConfigError('JWT_PUBLIC_KEY', 'is neither PEM nor valid JSON');
  }
  if (typeof json === 'object' && json !== null && Array.isArray((json as JSONWebKeySet).keys)) {
    return jwkSetKeys(json as JSONWebKeySet, allowed);
  }
  return jwkKeys(json as JWK, allowed);
}

/** How long a JWKS fetch may take, in milliseconds. */
export const JWKS_TIMEOUT_MS = 3000;
/** A fetched JWK Set is used for this long before it is fetched again. */
export const JWKS_MAX_AGE_MS = 10 * 60_000;
/** Fetches allowed at once, and the time after which one more is allowed (per isolate). */
export const JWKS_FETCH_BURST = 3;
export const JWKS_FETCH_INTERVAL_MS = 5000;

/**
 * A fetch refused by the fetch budget: nothing was asked of the provider, so a token naming a
 * `kid` we have not seen cannot be judged yet (it may be a key the provider just rotated in).
 */
class FetchBudgetSpent extends Error {
  constructor(waitMs: number) {
    super(
      `JWKS refetch budget spent (${JWKS_FETCH_BURST} per ${JWKS_FETCH_INTERVAL_MS} ms); next fetch in ${waitMs} ms`,
    );
    this.name = 'JwksFetchBudgetSpent';
  }
}

/**
 * JWT_JWKS_URL: the provider's JWK Set, fetched when first needed, refreshed after
 * JWKS_MAX_AGE_MS, and fetched again at once for a `kid` it does not have yet (so a key the
 * provider adds works without a redeploy). Fetches draw on a budget (JWKS_FETCH_BURST, then one per
 * JWKS_FETCH_INTERVAL_MS), so tokens with made-up `kid`s cannot make us hammer the provider.
 * While the provider is down or answers garbage, the keys fetched before keep working.
 */
export function remoteKeys(url: URL, allowed: string[] | undefined): VerificationKeys {
  refuseHmac(allowed, 'JWT_JWKS_URL');

  // What the provider last served, watched from inside jose's fetch: the last good set (kept for
  // when the provider fails) and whether the last fetch failed.
  let lastGood: ReturnType<typeof createLocalJWKSet> | undefined;
  let down = false;
  let budget = JWKS_FETCH_BURST;
  let refilledAt = Date.now();

  const watchedFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const now = Date.now();
    const earned = Math.floor((now - refilledAt) / JWKS_FETCH_INTERVAL_MS);
    if (earned > 0) {
      budget = Math.min(JWKS_FETCH_BURST, budget + earned);
      refilledAt = now;
    }
    if (budget === 0) throw new FetchBudgetSpent(JWKS_FETCH_INTERVAL_MS - (now - refilledAt));
    budget--;
    let res: Response;
    try {
      res = await fetch(input, init);
    } catch (err) {
      down = true;
      throw err;
    }
    down = true;
    if (res.status === 200) {
      try {
        lastGood = createLocalJWKSet(await res.clone().json());
        down = false;
      } catch {
        // Not a JWK Set: jose reports it; the provider counts as down.
      }
    }
    return res;
  };

  const remote = createRemoteJWKSet(url, {
    timeoutDuration: JWKS_TIMEOUT_MS,
    cacheMaxAge: JWKS_MAX_AGE_MS,
    cooldownDuration: 0, // the fetch budget does this job
    [customFetch]: watchedFetch,
  });

  const resolve: KeyResolver = async (header) => {
    try {
      return await remote(header);
    } catch (err) {
      if (
        err instanceof errors.JWKSNoMatchingKey ||
        err instanceof errors.JWKSMultipleMatchingKeys ||
        err instanceof errors.JOSENotSupported
      ) {
        throw err;
      }
      // The fetch failed or was not allowed: the keys the provider served before still count.
      if (lastGood !== undefined) {
        try {
          return await lastGood(header);
        } catch (missing) {
          // The provider answered the last fetch, and this one was made: the kid is unknown to
          // it (401). While it is down, or when no fetch could be made (the budget is spent, maybe
          // by a flood of made-up kids), the kid may be one just rotated in (503, retry): a
          // token is never called invalid on the word of a provider that was not asked.
          if (!down && !(err instanceof FetchBudgetSpent)) throw missing;
        }
      }
      throw new KeysUnavailable(err);
    }
  };
  return { algorithms: allowed ?? ASYMMETRIC, resolve };
}
