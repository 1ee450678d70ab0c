import { env, SELF } from 'cloudflare:test';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { countingDb, insertWebhook, snapshot, webhookRow } from './helpers/database';
import { expectDeleteFail, expectInvalidToken, expectSuccess, expectUpdateFail } from './helpers/replies';
import { del, fetchWith, fetchWorker, put, URL_ } from './helpers/requests';
import { bearer, now, tokenFor } from './helpers/tokens';

/** The token bound the docs promise (8 KiB). */
const MAX_TOKEN_LENGTH = 8192;

const b64url = (value: unknown) =>
  btoa(JSON.stringify(value)).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');

/**
 * Signs any header, even one jose refuses to produce (unknown `crit`), with the test secret. A
 * string payload is the payload's JSON text as it is (numbers JSON.stringify cannot write).
 */
async function signHs256(header: Record<string, unknown>, payload: Record<string, unknown> | string): Promise<string> {
  const body =
    typeof payload === 'string'
      ? btoa(payload).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')
      : b64url(payload);
  const input = `${b64url(header)}.${body}`;
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(env.JWT_SECRET),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(input)));
  const sig = btoa(String.fromCharCode(...mac))
    .replace(/=+$/, '')
    .replace(/\+/g, '-')
    .replace(/\//g, '_');
  return `${input}.${sig}`;
}

/**
 * A valid token for app-a whose `claim` is the JSON number text `number`, written as it is:
 * `1e400` parses to Infinity, which no JWT library can encode.
 */
function numberClaimToken(claim: 'exp' | 'nbf' | 'iat', number: string): Promise<string> {
  const claims: Record<string, unknown> = {
    sub: 'app-a',
    iss: env.JWT_ISSUER,
    aud: env.JWT_AUDIENCE,
    iat: now(),
    exp: now() + 300,
  };
  delete claims[claim];
  return signHs256({ alg: 'HS256', typ: 'JWT' }, `${JSON.stringify(claims).slice(0, -1)},"${claim}":${number}}`);
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** Sends a DELETE and a PUT for one webhook with `headers`; both must answer 20004 and change nothing. */
async function expectRejectedBoth(headers: Record<string, string>, expectChallenge: 'invalid_token' | 'bare') {
  const id = await insertWebhook('app-a', { enabled: true });
  const before = await snapshot();
  const replies = [await del(`webhook_id=${id}`, headers), await put({ webhook_id: id, is_enabled: false }, headers)];
  for (const res of replies) {
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer realm="nft-webhook"/);
    if (expectChallenge === 'invalid_token') expect(challenge).toContain('error="invalid_token"');
    else expect(challenge).not.toContain('error=');
    await expectInvalidToken(res);
  }
  expect(await snapshot()).toEqual(before);
}

describe('authentication', () => {
  it('accepts the scheme word in any case and with several spaces', async () => {
    const token = await tokenFor('app-a');
    for (const header of [`bearer ${token}`, `BEARER ${token}`, `Bearer   ${token}`]) {
      const id = await insertWebhook('app-a');
      await expectSuccess(await del(`webhook_id=${id}`, { authorization: header }));
      expect(await webhookRow(id)).toBeNull();
    }
  });

  it('answers 401 without a challenge error when no Authorization header is sent', async () => {
    await expectRejectedBoth({}, 'bare');
  });

  it.each([
    ['another scheme', async () => `Basic ${btoa('app-a:secret')}`],
    ['the scheme word alone', async () => 'Bearer'],
    ['the token without the scheme word', async () => tokenFor('app-a')],
    ['no space after the scheme word', async () => `Bearer${await tokenFor('app-a')}`],
  ])('answers 401 for %s', async (_, header) => {
    await expectRejectedBoth({ authorization: await header() }, 'bare');
  });

  const tokens: [string, () => Promise<string>][] = [
    ['a malformed token', async () => 'not.a.jwt'],
    ['two segments', async () => (await tokenFor('app-a')).split('.').slice(0, 2).join('.')],
    ['a bad signature', async () => tokenFor('app-a', {}, { secret: 'another-secret-another-secret-another' })],
    [
      'a tampered payload',
      async () => {
        const [h, , s] = (await tokenFor('app-a')).split('.');
        return `${h}.${b64url({ sub: 'app-b', iss: env.JWT_ISSUER, aud: env.JWT_AUDIENCE, exp: now() + 300 })}.${s}`;
      },
    ],
    [
      'alg none',
      async () =>
        new UnsecuredJWT({ sub: 'app-a', iss: env.JWT_ISSUER, aud: env.JWT_AUDIENCE, exp: now() + 300 }).encode(),
    ],
    [
      'alg none with a signature',
      async () => {
        const [, p, s] = (await tokenFor('app-a')).split('.');
        return `${b64url({ alg: 'none', typ: 'JWT' })}.${p}.${s}`;
      },
    ],
    [
      'HS512 (not in the allow-list)',
      async () =>
        new SignJWT({ sub: 'app-a', iss: env.JWT_ISSUER, aud: env.JWT_AUDIENCE, exp: now() + 300 })
          .setProtectedHeader({ alg: 'HS512' })
          .sign(new TextEncoder().encode(env.JWT_SECRET)),
    ],
    ['an expired token', async () => tokenFor('app-a', { exp: now() - 60 })],
    ['no exp', async () => tokenFor('app-a', { exp: undefined })],
    ['a non-numeric exp', async () => tokenFor('app-a', { exp: 'tomorrow' })],
    ['exp 1e400 (infinite)', () => numberClaimToken('exp', '1e400')],
    ['exp -1e400', () => numberClaimToken('exp', '-1e400')],
    ['nbf -1e400', () => numberClaimToken('nbf', '-1e400')],
    ['nbf 1e400', () => numberClaimToken('nbf', '1e400')],
    ['iat -1e400', () => numberClaimToken('iat', '-1e400')],
    ['iat 1e400', () => numberClaimToken('iat', '1e400')],
    ['nbf in the future', async () => tokenFor('app-a', { nbf: now() + 600 })],
    ['iat in the future', async () => tokenFor('app-a', { iat: now() + 600 })],
    ['a wrong issuer', async () => tokenFor('app-a', { iss: 'https://other-issuer.test' })],
    ['no issuer', async () => tokenFor('app-a', { iss: undefined })],
    ['a wrong audience', async () => tokenFor('app-a', { aud: 'other-api' })],
    ['no audience', async () => tokenFor('app-a', { aud: undefined })],
    ['no app claim', async () => tokenFor('app-a', { sub: undefined })],
    ['an empty app claim', async () => tokenFor('app-a', { sub: '' })],
    ['a numeric app claim', async () => tokenFor('app-a', { sub: 42 })],
    ['an object app claim', async () => tokenFor('app-a', { sub: { id: 'app-a' } })],
    ['an app claim with NUL', async () => tokenFor('app-a', { sub: 'app-a\u0000' })],
    ['an app claim with a newline', async () => tokenFor('app-a', { sub: 'app-a\nINFO forged' })],
    ['an app claim with DEL', async () => tokenFor('app-a', { sub: 'app-a\u007f' })],
    ['an app claim with a lone surrogate', async () => tokenFor('app-a', { sub: 'app-a\ud800' })],
    [
      'an unknown crit header',
      async () =>
        signHs256(
          { alg: 'HS256', crit: ['x-unknown'], 'x-unknown': 1 },
          { sub: 'app-a', iss: env.JWT_ISSUER, aud: env.JWT_AUDIENCE, exp: now() + 300 },
        ),
    ],
    ['an oversize token', async () => tokenFor('app-a', { pad: 'x'.repeat(MAX_TOKEN_LENGTH) })],
    ['a token with spaces inside', async () => (await tokenFor('app-a')).replace('.', ' .')],
  ];
  it.each(tokens)('answers 401 invalid_token for %s, for DELETE and PUT, changing nothing', async (_, make) => {
    await expectRejectedBoth(bearer(await make()), 'invalid_token');
  });

  it('accepts a hand-signed token without crit (control for the crit case)', async () => {
    const id = await insertWebhook('app-a');
    const token = await signHs256(
      { alg: 'HS256' },
      { sub: 'app-a', iss: env.JWT_ISSUER, aud: env.JWT_AUDIENCE, exp: now() + 300 },
    );
    await expectSuccess(await del(`webhook_id=${id}`, bearer(token)));
  });

  it.each([
    ['exp', String(now() + 300)],
    ['nbf', String(now() - 60)],
    ['iat', `${now() - 60}.5`],
    ['exp', `${now() + 300}e0`],
  ])('accepts a hand-written finite %s %s (control for the 1e400 cases)', async (claim, number) => {
    const id = await insertWebhook('app-a');
    const token = await numberClaimToken(claim as 'exp' | 'nbf' | 'iat', number);
    await expectSuccess(await del(`webhook_id=${id}`, bearer(token)));
    expect(await webhookRow(id)).toBeNull();
  });

  it('accepts an audience list that contains the configured audience', async () => {
    const id = await insertWebhook('app-a');
    await expectSuccess(
      await del(`webhook_id=${id}`, bearer(await tokenFor('app-a', { aud: ['x', env.JWT_AUDIENCE] }))),
    );
  });

  it('rejects a bad token before looking at the input', async () => {
    const res = await SELF.fetch(URL_, {
      method: 'PUT',
      headers: { authorization: 'Bearer nope', 'content-type': 'text/plain' },
      body: 'x'.repeat(100_000),
    });
    await expectInvalidToken(res);
    await expectInvalidToken(await del('webhook_id=-1', { authorization: 'Bearer nope' }));
  });

  it('touches no storage for a rejected token', async () => {
    const { db, calls } = countingDb(env.DB);
    const res = await fetchWith({ DB: db }, new Request(`${URL_}?webhook_id=1`, { method: 'DELETE' }));
    await expectInvalidToken(res);
    expect(calls()).toBe(0);
  });

  it('does not check iss or aud when JWT_ISSUER and JWT_AUDIENCE are unset', async () => {
    const id = await insertWebhook('app-a');
    const token = await tokenFor('app-a', { iss: undefined, aud: undefined });
    const res = await fetchWith(
      { JWT_ISSUER: '', JWT_AUDIENCE: '' },
      new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(token) }),
    );
    await expectSuccess(res);
    expect(await webhookRow(id)).toBeNull();
  });

  it('takes the application from the claim JWT_APP_CLAIM names', async () => {
    const id = await insertWebhook('app-c');
    const token = await tokenFor('someone', { client_id: 'app-c' });
    const request = () => new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(token) });

    await expectDeleteFail(await fetchWith({}, request()), 404);
    await expectSuccess(await fetchWith({ JWT_APP_CLAIM: 'client_id' }, request()));
    expect(await webhookRow(id)).toBeNull();
  });

  it('fails closed without JWT_SECRET: 500 with the op code, and a log naming the setting', async () => {
    const id = await insertWebhook('app-a');
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const token = await tokenFor('app-a');

    const deleteRes = await fetchWith(
      { JWT_SECRET: undefined },
      new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(token) }),
    );
    const putRes = await fetchWith(
      { JWT_SECRET: '' },
      new Request(URL_, {
        method: 'PUT',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ webhook_id: id, is_enabled: false }),
      }),
    );
    const noHeader = await fetchWith({ JWT_SECRET: '' }, new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE' }));

    await expectDeleteFail(deleteRes, 500);
    await expectUpdateFail(putRes, 500);
    await expectDeleteFail(noHeader, 500);
    expect(deleteRes.headers.get('x-error-detail')).toBeNull();
    expect(errors).toHaveBeenCalledWith(expect.stringContaining('JWT_SECRET'));
    expect(await webhookRow(id)).toMatchObject({ is_enabled: 1 });
  });

  it('imports the key once per isolate, not per request', async () => {
    const bindings = { ...env }; // a new env object, used for every request as in production
    const token = await tokenFor('app-a');
    const importKey = vi.spyOn(crypto.subtle, 'importKey');
    for (let i = 0; i < 5; i++) {
      const id = await insertWebhook('app-a');
      await expectSuccess(
        await fetchWorker(
          new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(token) }),
          bindings,
        ),
      );
    }
    expect(importKey).toHaveBeenCalledTimes(1);
  });

  describe('verified-token cache', () => {
    const deleteWith = async (bindings: object, token: string) => {
      const id = await insertWebhook('app-a');
      const res = await fetchWorker(
        new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(token) }),
        bindings,
      );
      return { res, deleted: (await webhookRow(id)) === null };
    };

    it('stops trusting a cached token once it expires', async () => {
      const bindings = { ...env };
      const token = await tokenFor('app-a', { exp: now() + 10 });
      const first = await deleteWith(bindings, token);
      await expectSuccess(first.res);
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + 30_000);
      const later = await deleteWith(bindings, token);
      await expectInvalidToken(later.res);
      expect(later.deleted).toBe(false);
    });

    it('stops trusting a cached token past JWT_MAX_TOKEN_AGE', async () => {
      const bindings = { ...env, JWT_MAX_TOKEN_AGE: '60' };
      const token = await tokenFor('app-a', { iat: now() - 50, exp: now() + 3600 });
      await expectSuccess((await deleteWith(bindings, token)).res);
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + 20_000);
      await expectInvalidToken((await deleteWith(bindings, token)).res);
    });

    it('does not carry a token verified under one configuration to another', async () => {
      const token = await tokenFor('app-a');
      await expectSuccess((await deleteWith({ ...env }, token)).res);
      const other = await deleteWith({ ...env, JWT_SECRET: 'a-different-secret-a-different-secret' }, token);
      await expectInvalidToken(other.res);
      expect(other.deleted).toBe(false);
    });

    it('verifies a token again after the cache time', async () => {
      const bindings = { ...env };
      const token = await tokenFor('app-a', { exp: now() + 3600 });
      await expectSuccess((await deleteWith(bindings, token)).res);
      const verify = vi.spyOn(crypto.subtle, 'verify');
      await expectSuccess((await deleteWith(bindings, token)).res);
      expect(verify).not.toHaveBeenCalled();
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + 61_000);
      await expectSuccess((await deleteWith(bindings, token)).res);
      expect(verify).toHaveBeenCalledTimes(1);
    });
  });
});
