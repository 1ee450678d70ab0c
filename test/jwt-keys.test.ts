import { env } from 'cloudflare:test';
import {
  exportJWK,
  exportPKCS8,
  exportSPKI,
  generateKeyPair,
  importPKCS8,
  importSPKI,
  type CryptoKey as JoseKey,
  type JWK,
} from 'jose';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { insertWebhook, webhookRow } from './helpers/database';
import { expectDeleteFail, expectInvalidToken, expectSuccess } from './helpers/replies';
import { fetchWorker, URL_ } from './helpers/requests';
import { bearer, now, tokenFor } from './helpers/tokens';

interface Pair {
  alg: string;
  privateKey: JoseKey;
  publicKey: JoseKey;
}
const pair = async (alg: string, options: { crv?: string; modulusLength?: number } = {}): Promise<Pair> => ({
  alg,
  ...(await generateKeyPair(alg, { extractable: true, ...options })),
});

/** A configuration, as one env object reused for every request (as the runtime does). */
const config = (settings: Record<string, string>) => ({ ...env, JWT_SECRET: '', ...settings });

/** A token for app-a signed by `signer`, with `header` and `claims` added. */
const signed = (signer: Pair, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}) =>
  tokenFor('app-a', claims, { key: signer.privateKey, alg: signer.alg, header });

/** DELETEs a fresh webhook of app-a with `token` under `bindings`: the reply and whether it is gone. */
async function attempt(bindings: object, token: string) {
  const id = await insertWebhook('app-a');
  const res = await fetchWorker(
    new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(token) }),
    bindings,
  );
  return { res, deleted: (await webhookRow(id)) === null };
}

async function expectAccepted(bindings: object, token: string) {
  const { res, deleted } = await attempt(bindings, token);
  await expectSuccess(res);
  expect(deleted).toBe(true);
}

async function expectRejected(bindings: object, token: string) {
  const { res, deleted } = await attempt(bindings, token);
  await expectInvalidToken(res);
  expect(deleted).toBe(false);
}

/** 500 with the op code, nothing changed, and a log line naming `setting`. */
async function expectMisconfigured(bindings: object, setting: string, token: string) {
  const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
  const { res, deleted } = await attempt(bindings, token);
  expect(res.headers.get('x-error-detail')).toBeNull();
  await expectDeleteFail(res, 500);
  expect(deleted).toBe(false);
  expect(errors.mock.calls.map((c) => String(c[0])).join('\n')).toContain(`configuration error: ${setting}`);
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

let rsa: Pair, rsa2: Pair, ec: Pair, ed: Pair;
beforeAll(async () => {
  [rsa, rsa2, ec, ed] = await Promise.all([
    pair('RS256'),
    pair('RS256'),
    pair('ES256'),
    pair('EdDSA', { crv: 'Ed25519' }),
  ]);
});
/** The same key pair, for another algorithm of its family (RS256 key material used for PS256). */
const as = async (p: Pair, alg: string): Promise<Pair> => ({
  alg,
  publicKey: await importSPKI(await exportSPKI(p.publicKey), alg, { extractable: true }),
  privateKey: await importPKCS8(await exportPKCS8(p.privateKey), alg, { extractable: true }),
});
const jwk = async (p: Pair, extra: Partial<JWK> = {}) => ({ ...(await exportJWK(p.publicKey)), ...extra });

describe('public keys (JWT_PUBLIC_KEY)', () => {
  const kinds: [string, () => Promise<{ settings: Record<string, string>; signer: Pair; other: Pair }>][] = [
    [
      'an RSA key as PEM',
      async () => ({ settings: { JWT_PUBLIC_KEY: await exportSPKI(rsa.publicKey) }, signer: rsa, other: rsa2 }),
    ],
    [
      'an RSA key as one-line PEM with \\n escapes',
      async () => ({
        settings: { JWT_PUBLIC_KEY: (await exportSPKI(rsa.publicKey)).replace(/\n/g, '\\n') },
        signer: rsa,
        other: rsa2,
      }),
    ],
    [
      'an EC P-256 key as PEM',
      async () => ({
        settings: { JWT_PUBLIC_KEY: await exportSPKI(ec.publicKey) },
        signer: ec,
        other: await pair('ES256'),
      }),
    ],
    [
      'an Ed25519 key as a JWK',
      async () => ({
        settings: { JWT_PUBLIC_KEY: JSON.stringify(await jwk(ed)) },
        signer: ed,
        other: await pair('EdDSA', { crv: 'Ed25519' }),
      }),
    ],
    [
      'an RSA key as a JWK for PS256',
      async () => ({
        settings: { JWT_PUBLIC_KEY: JSON.stringify(await jwk(rsa, { alg: 'PS256' })) },
        signer: await as(rsa, 'PS256'),
        other: await as(rsa2, 'PS256'),
      }),
    ],
  ];

  describe.each(kinds)('%s', (_, make) => {
    it('accepts a valid token', async () => {
      const { settings, signer } = await make();
      await expectAccepted(config(settings), await signed(signer));
    });

    it('rejects an expired token', async () => {
      const { settings, signer } = await make();
      await expectRejected(config(settings), await signed(signer, { exp: now() - 60 }));
    });

    it('rejects a token signed by another key', async () => {
      const { settings, other } = await make();
      await expectRejected(config(settings), await signed(other));
    });
  });

  it('takes an Ed25519 token under either name, EdDSA or Ed25519 (RFC 9864)', async () => {
    for (const value of [JSON.stringify(await jwk(ed)), await exportSPKI(ed.publicKey)]) {
      const bindings = config({ JWT_PUBLIC_KEY: value });
      await expectAccepted(bindings, await signed(ed));
      await expectAccepted(bindings, await signed({ ...ed, alg: 'Ed25519' }));
    }
  });

  describe('a JWK Set with two kids (rotation)', () => {
    const set = async () =>
      config({
        JWT_PUBLIC_KEY: JSON.stringify({ keys: [await jwk(rsa, { kid: 'old' }), await jwk(rsa2, { kid: 'new' })] }),
      });

    it('accepts tokens of both keys', async () => {
      const bindings = await set();
      await expectAccepted(bindings, await signed(rsa, {}, { kid: 'old' }));
      await expectAccepted(bindings, await signed(rsa2, {}, { kid: 'new' }));
    });

    it('rejects a token whose kid names one key but is signed by the other', async () => {
      await expectRejected(await set(), await signed(rsa2, {}, { kid: 'old' }));
    });

    it('rejects an unknown kid, and a token without kid (ambiguous)', async () => {
      const bindings = await set();
      await expectRejected(bindings, await signed(rsa, {}, { kid: 'other' }));
      await expectRejected(bindings, await signed(rsa));
    });
  });

  it('imports keys once per isolate, not per request', async () => {
    const bindings = config({
      JWT_PUBLIC_KEY: JSON.stringify({ keys: [await jwk(rsa, { kid: 'a' }), await jwk(ec, { kid: 'b' })] }),
    });
    const tokens = [await signed(rsa, {}, { kid: 'a' }), await signed(ec, {}, { kid: 'b' })];
    const importKey = vi.spyOn(crypto.subtle, 'importKey');
    for (let i = 0; i < 6; i++) await expectAccepted(bindings, tokens[i % 2] as string);
    expect(importKey).toHaveBeenCalledTimes(2);
  });
});

describe('algorithm allow-list (JWT_ALGORITHMS)', () => {
  it('defaults to the key’s algorithm: an RS256 key does not verify PS256', async () => {
    await expectRejected(
      config({ JWT_PUBLIC_KEY: await exportSPKI(rsa.publicKey) }),
      await signed(await as(rsa, 'PS256')),
    );
  });

  it('allows exactly the listed algorithms', async () => {
    const pem = await exportSPKI(rsa.publicKey);
    const both = config({ JWT_PUBLIC_KEY: pem, JWT_ALGORITHMS: 'RS256, PS256' });
    await expectAccepted(both, await signed(rsa));
    await expectAccepted(both, await signed(await as(rsa, 'PS256')));
    await expectRejected(config({ JWT_PUBLIC_KEY: pem, JWT_ALGORITHMS: 'PS256' }), await signed(rsa));
  });

  // A security rule, so it is shown for every key source: RS256 only, and a PS256 token signed by
  // the very same RSA key is refused (jose would verify it with that key if the list allowed it).
  const sources: [string, () => Promise<Record<string, string>>][] = [
    ['a PEM key', async () => ({ JWT_PUBLIC_KEY: await exportSPKI(rsa.publicKey) })],
    ['a JWK without alg', async () => ({ JWT_PUBLIC_KEY: JSON.stringify(await jwk(rsa)) })],
    ['a JWK Set', async () => ({ JWT_PUBLIC_KEY: JSON.stringify({ keys: [await jwk(rsa, { kid: 'k1' })] }) })],
  ];
  it.each(sources)('holds for %s: RS256 listed, a PS256 token of the same key is refused', async (_, make) => {
    const bindings = config({ ...(await make()), JWT_ALGORITHMS: 'RS256' });
    await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
    await expectRejected(bindings, await signed(await as(rsa, 'PS256'), {}, { kid: 'k1' }));
  });

  it('holds for a JWKS URL: RS256 listed, a PS256 token of the provider’s RSA key is refused', async () => {
    vi.spyOn(globalThis, 'fetch').mockImplementation(async () =>
      Response.json({ keys: [await jwk(rsa, { kid: 'k1' })] }),
    );
    const bindings = config({ JWT_JWKS_URL: 'https://idp.test/allow-list/jwks', JWT_ALGORITHMS: 'RS256' });
    await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
    await expectRejected(bindings, await signed(await as(rsa, 'PS256'), {}, { kid: 'k1' }));
    // And the other way round: PS256 listed, RS256 refused.
    const ps = config({ JWT_JWKS_URL: 'https://idp.test/allow-list-ps/jwks', JWT_ALGORITHMS: 'PS256' });
    await expectAccepted(ps, await signed(await as(rsa, 'PS256'), {}, { kid: 'k1' }));
    await expectRejected(ps, await signed(rsa, {}, { kid: 'k1' }));
  });

  it('defaults to HS256 for a secret, and takes HS384 when listed', async () => {
    const hs384 = await tokenFor('app-a', {}, { alg: 'HS384' });
    await expectRejected(config({ JWT_SECRET: env.JWT_SECRET }), hs384);
    const only384 = config({ JWT_SECRET: env.JWT_SECRET, JWT_ALGORITHMS: 'HS384' });
    await expectAccepted(only384, hs384);
    await expectRejected(only384, await tokenFor('app-a'));
  });
});

describe('key confusion', () => {
  const hmacWith = (secret: string) => tokenFor('app-a', {}, { secret });

  it('rejects HS256 tokens signed with the public key’s PEM text or JWK fields', async () => {
    const pem = await exportSPKI(rsa.publicKey);
    const rsaJwk = await jwk(rsa);
    await expectRejected(config({ JWT_PUBLIC_KEY: pem }), await hmacWith(pem));
    await expectRejected(config({ JWT_PUBLIC_KEY: pem }), await hmacWith(pem.replace(/\n/g, '\\n')));
    await expectRejected(config({ JWT_PUBLIC_KEY: JSON.stringify(rsaJwk) }), await hmacWith(JSON.stringify(rsaJwk)));
    await expectRejected(config({ JWT_PUBLIC_KEY: JSON.stringify(rsaJwk) }), await hmacWith(rsaJwk.n as string));
  });

  it('never takes a key from jwk, jku, x5u or x5c headers', async () => {
    const attacker = await pair('RS256');
    const bindings = config({ JWT_PUBLIC_KEY: await exportSPKI(rsa.publicKey) });
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    await expectRejected(bindings, await signed(attacker, {}, { jwk: await jwk(attacker) }));
    await expectRejected(bindings, await signed(attacker, {}, { jku: 'https://attacker.example/jwks' }));
    await expectRejected(bindings, await signed(attacker, {}, { x5u: 'https://attacker.example/cert' }));
    await expectRejected(bindings, await signed(attacker, {}, { x5c: ['MIIB'] }));
    expect(fetchSpy).not.toHaveBeenCalled();
  });
});

describe('claims settings', () => {
  it('checks typ when JWT_TYP is set', async () => {
    const bindings = config({ JWT_PUBLIC_KEY: await exportSPKI(ec.publicKey), JWT_TYP: 'at+jwt' });
    await expectRejected(bindings, await signed(ec));
    await expectAccepted(bindings, await signed(ec, {}, { typ: 'at+jwt' }));
    await expectAccepted(bindings, await signed(ec, {}, { typ: 'application/at+jwt' }));
  });

  it('allows JWT_CLOCK_TOLERANCE seconds of skew (default 5)', async () => {
    const pem = await exportSPKI(ec.publicKey);
    await expectAccepted(config({ JWT_PUBLIC_KEY: pem }), await signed(ec, { exp: now() - 2 }));
    await expectRejected(config({ JWT_PUBLIC_KEY: pem }), await signed(ec, { exp: now() - 30 }));
    await expectAccepted(
      config({ JWT_PUBLIC_KEY: pem, JWT_CLOCK_TOLERANCE: '60' }),
      await signed(ec, { exp: now() - 30 }),
    );
    await expectAccepted(
      config({ JWT_PUBLIC_KEY: pem, JWT_CLOCK_TOLERANCE: '60' }),
      await signed(ec, { nbf: now() + 30 }),
    );
  });

  it('rejects tokens older than JWT_MAX_TOKEN_AGE, and tokens without iat when it is set', async () => {
    const bindings = config({ JWT_PUBLIC_KEY: await exportSPKI(ec.publicKey), JWT_MAX_TOKEN_AGE: '60' });
    await expectAccepted(bindings, await signed(ec));
    await expectRejected(bindings, await signed(ec, { iat: now() - 120 }));
    await expectRejected(bindings, await signed(ec, { iat: undefined }));
  });
});

describe('configuration errors fail closed', () => {
  const cases: [string, string, () => Promise<Record<string, string>>][] = [
    [
      'a secret and a public key',
      'JWT_SECRET',
      async () => ({ JWT_SECRET: 'x'.repeat(32), JWT_PUBLIC_KEY: await exportSPKI(rsa.publicKey) }),
    ],
    [
      'a secret and a JWKS URL',
      'JWT_SECRET',
      async () => ({ JWT_SECRET: 'x'.repeat(32), JWT_JWKS_URL: 'https://idp.test/jwks' }),
    ],
    [
      'a public key and a JWKS URL',
      'JWT_JWKS_URL',
      async () => ({ JWT_PUBLIC_KEY: await exportSPKI(rsa.publicKey), JWT_JWKS_URL: 'https://idp.test/jwks' }),
    ],
    [
      'an algorithm the key cannot do',
      'JWT_ALGORITHMS',
      async () => ({ JWT_PUBLIC_KEY: await exportSPKI(rsa.publicKey), JWT_ALGORITHMS: 'ES256' }),
    ],
    [
      'HS256 with a public key',
      'JWT_ALGORITHMS',
      async () => ({ JWT_PUBLIC_KEY: await exportSPKI(rsa.publicKey), JWT_ALGORITHMS: 'HS256' }),
    ],
    ['RS256 with a secret', 'JWT_ALGORITHMS', async () => ({ JWT_SECRET: 'x'.repeat(32), JWT_ALGORITHMS: 'RS256' })],
    [
      'HS256 with a JWKS URL',
      'JWT_ALGORITHMS',
      async () => ({ JWT_JWKS_URL: 'https://idp.test/jwks', JWT_ALGORITHMS: 'HS256' }),
    ],
    ['alg none', 'JWT_ALGORITHMS', async () => ({ JWT_SECRET: 'x'.repeat(32), JWT_ALGORITHMS: 'none' })],
    [
      'alg none with a PEM key',
      'JWT_ALGORITHMS',
      async () => ({ JWT_PUBLIC_KEY: await exportSPKI(rsa.publicKey), JWT_ALGORITHMS: 'RS256,none' }),
    ],
    [
      'alg none with a JWK',
      'JWT_ALGORITHMS',
      async () => ({ JWT_PUBLIC_KEY: JSON.stringify(await jwk(rsa)), JWT_ALGORITHMS: 'none' }),
    ],
    [
      'alg none with a JWK Set',
      'JWT_ALGORITHMS',
      async () => ({
        JWT_PUBLIC_KEY: JSON.stringify({ keys: [await jwk(rsa, { kid: 'a' })] }),
        JWT_ALGORITHMS: 'none',
      }),
    ],
    [
      'alg none with a JWKS URL',
      'JWT_ALGORITHMS',
      async () => ({ JWT_JWKS_URL: 'https://idp.test/jwks', JWT_ALGORITHMS: 'none' }),
    ],
    [
      'alg none beside RS256 with a JWKS URL',
      'JWT_ALGORITHMS',
      async () => ({ JWT_JWKS_URL: 'https://idp.test/jwks', JWT_ALGORITHMS: 'RS256, none' }),
    ],
    [
      'a JWK for another algorithm',
      'JWT_ALGORITHMS',
      async () => ({ JWT_PUBLIC_KEY: JSON.stringify(await jwk(ec)), JWT_ALGORITHMS: 'ES384' }),
    ],
    ['a private key as PEM', 'JWT_PUBLIC_KEY', async () => ({ JWT_PUBLIC_KEY: await exportPKCS8(rsa.privateKey) })],
    [
      'a private JWK',
      'JWT_PUBLIC_KEY',
      async () => ({ JWT_PUBLIC_KEY: JSON.stringify(await exportJWK(ec.privateKey)) }),
    ],
    [
      'a symmetric JWK',
      'JWT_PUBLIC_KEY',
      async () => ({ JWT_PUBLIC_KEY: JSON.stringify({ kty: 'oct', k: 'c2VjcmV0' }) }),
    ],
    ['garbage', 'JWT_PUBLIC_KEY', async () => ({ JWT_PUBLIC_KEY: 'not a key' })],
    [
      'a broken JWK',
      'JWT_PUBLIC_KEY',
      async () => ({ JWT_PUBLIC_KEY: JSON.stringify({ kty: 'RSA', n: 'AQAB', e: 'AQAB', alg: 'RS256' }) }),
    ],
    [
      'a JWK Set with a key without kid',
      'JWT_PUBLIC_KEY',
      async () => ({ JWT_PUBLIC_KEY: JSON.stringify({ keys: [await jwk(rsa, { kid: 'a' }), await jwk(rsa2)] }) }),
    ],
    ['a plain-http JWKS URL', 'JWT_JWKS_URL', async () => ({ JWT_JWKS_URL: 'http://idp.example/jwks' })],
    ['a JWKS URL that is not a URL', 'JWT_JWKS_URL', async () => ({ JWT_JWKS_URL: 'idp/jwks' })],
    [
      'a clock tolerance that is not a number',
      'JWT_CLOCK_TOLERANCE',
      async () => ({ JWT_SECRET: 'x'.repeat(32), JWT_CLOCK_TOLERANCE: 'abc' }),
    ],
    [
      'a negative maximum token age',
      'JWT_MAX_TOKEN_AGE',
      async () => ({ JWT_SECRET: 'x'.repeat(32), JWT_MAX_TOKEN_AGE: '-1' }),
    ],
  ];
  it.each(cases)('answers 500 for %s, logging %s', async (_, setting, make) => {
    await expectMisconfigured(config(await make()), setting, await signed(rsa));
  });
});

describe('remote JWK Set (JWT_JWKS_URL)', () => {
  /** A mocked identity provider behind the runtime's fetch. */
  function provider(keys: JWK[]) {
    const state = { keys, mode: 'ok' as 'ok' | 'down' | 'garbage' | 'error' | 'slow', fetches: 0 };
    vi.spyOn(globalThis, 'fetch').mockImplementation(async (_input, init) => {
      state.fetches++;
      switch (state.mode) {
        case 'ok':
          return Response.json({ keys: state.keys });
        case 'garbage':
          return new Response('<html>maintenance</html>', { headers: { 'content-type': 'text/html' } });
        case 'error':
          return new Response('bad gateway', { status: 502 });
        case 'down':
          throw new TypeError('Network connection lost.');
        case 'slow':
          return new Promise<Response>((_, reject) => {
            init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
          });
      }
    });
    return state;
  }
  let seq = 0;
  const remote = () => config({ JWT_JWKS_URL: `https://idp.test/${++seq}/.well-known/jwks.json` });

  async function expectUnavailable(bindings: object, token: string) {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const { res, deleted } = await attempt(bindings, token);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('x-error-detail')).toBeNull();
    await expectDeleteFail(res, 503);
    expect(deleted).toBe(false);
  }

  it('fetches once, then serves from its cache', async () => {
    const idp = provider([await jwk(rsa, { kid: 'k1', alg: 'RS256', use: 'sig' })]);
    const bindings = remote();
    for (let i = 0; i < 3; i++) await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
    expect(idp.fetches).toBe(1);
  });

  it('accepts a key the provider adds, without a redeploy; a kid it does not list is 401', async () => {
    const idp = provider([await jwk(rsa, { kid: 'k1' })]);
    const bindings = remote();
    await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
    idp.keys = [...idp.keys, await jwk(ec, { kid: 'k2' })];
    await expectAccepted(bindings, await signed(ec, {}, { kid: 'k2' }));
    expect(idp.fetches).toBe(2);
    await expectRejected(bindings, await signed(rsa, {}, { kid: 'k9' }));
    expect(idp.fetches).toBe(3);
  });

  it('bounds the fetches that tokens with made-up kids can cause: 401 while it asks, then 503', async () => {
    const idp = provider([await jwk(rsa, { kid: 'k1' })]);
    const bindings = remote();
    await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
    for (let i = 0; i < 2; i++) await expectRejected(bindings, await signed(rsa, {}, { kid: `made-up-${i}` }));
    // The budget is spent: the provider was not asked, so the token is not called invalid.
    for (let i = 2; i < 10; i++) await expectUnavailable(bindings, await signed(rsa, {}, { kid: `made-up-${i}` }));
    expect(idp.fetches).toBe(3);
    await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
  });

  it('never locks out a key rotated in during a flood of made-up kids: 503, then 200 once a fetch is allowed', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const idp = provider([await jwk(rsa, { kid: 'k1' })]);
    const bindings = remote();
    await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
    for (let i = 0; i < 5; i++) {
      const { res } = await attempt(bindings, await signed(rsa, {}, { kid: `flood-${i}` }));
      expect([401, 503]).toContain(res.status);
    }
    expect(idp.fetches).toBe(3);
    // The provider rotates: a genuine token with the new kid, and the fresh one a client would
    // fetch after it, are never 401.
    idp.keys = [...idp.keys, await jwk(rsa2, { kid: 'k2' })];
    await expectUnavailable(bindings, await signed(rsa2, {}, { kid: 'k2' }));
    await expectUnavailable(bindings, await signed(rsa2, { jti: 'fresh' }, { kid: 'k2' }));
    expect(idp.fetches).toBe(3);
    // The refusal is logged with its reason.
    expect(errors.mock.calls.map((c) => String(c[0])).join('\n')).toMatch(
      /JwksFetchBudgetSpent: JWKS refetch budget spent/,
    );
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 5000);
    await expectAccepted(bindings, await signed(rsa2, {}, { kid: 'k2' }));
    expect(idp.fetches).toBe(4);
    await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
  });

  it.each(['down', 'garbage', 'error'] as const)(
    'while the provider is %s: cached keys work, a new kid is 503',
    async (mode) => {
      const idp = provider([await jwk(rsa, { kid: 'k1' })]);
      const bindings = remote();
      await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
      idp.mode = mode;
      idp.keys = [...idp.keys, await jwk(ec, { kid: 'k2' })];
      await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
      for (let i = 0; i < 3 + 2; i++) await expectUnavailable(bindings, await signed(ec, {}, { kid: 'k2' }));
      expect(idp.fetches).toBe(3);
      await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
    },
  );

  it('keeps using cached keys past their refresh time while the provider is down', async () => {
    const idp = provider([await jwk(rsa, { kid: 'k1' })]);
    const bindings = remote();
    await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
    idp.mode = 'down';
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 11 * 60_000);
    await expectAccepted(bindings, await signed(rsa, {}, { kid: 'k1' }));
    expect(idp.fetches).toBe(2);
  });

  it('answers 503 when the provider is unreachable from the start, never 20004', async () => {
    const idp = provider([]);
    idp.mode = 'down';
    await expectUnavailable(remote(), await signed(rsa, {}, { kid: 'k1' }));
  });

  it('gives up on a slow provider after 3000 ms with 503', async () => {
    const idp = provider([await jwk(rsa, { kid: 'k1' })]);
    idp.mode = 'slow';
    const started = Date.now();
    await expectUnavailable(remote(), await signed(rsa, {}, { kid: 'k1' }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000 - 50);
  }, 10_000);

  it('verifies with the remote set’s key only for its algorithm family', async () => {
    provider([await jwk(rsa, { kid: 'k1' })]);
    const bindings = remote();
    await expectRejected(
      bindings,
      await tokenFor('app-a', {}, { secret: JSON.stringify(await jwk(rsa)), header: { kid: 'k1' } }),
    );
    await expectRejected(bindings, await signed(ec, {}, { kid: 'k1' }));
  });
});
