// An application id whose bytes are not UTF-8 (a query's `%FF` or `%ED%A0%80`, a body's raw byte, a
// token's claim) is refused, never read with U+FFFD in their place: that would be another
// application's id, one that may exist. 400 for a query or a body, 401 for a token's claim.
import { env } from 'cloudflare:test';
import { base64url } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  APPLICATION_URL,
  adminHeaders,
  applicationAudit,
  applicationRow,
  callApplication,
} from './helpers/applications';
import { webhooksOf } from './helpers/database';
import { receiver } from './helpers/receiver';
import {
  expectApplicationFail,
  expectEnvelope,
  expectEventFail,
  expectInvalidToken,
  expectValue,
} from './helpers/replies';
import { EVENT_URL, fetchWith, post, publishEvent } from './helpers/requests';
import { bearer, freshApp, now, platformToken, tokenFor } from './helpers/tokens';

/** A webhook of `app` (whatever characters its id has), registered with its own token. */
async function hookOf(app: string) {
  const { value } = await expectValue<{ webhook_id: number }>(
    await post({ url: 'https://hooks.example.com/encoding' }, bearer(await tokenFor(app))),
    201,
  );
  return String(value.webhook_id);
}

/** Bytes: text as UTF-8 with `raw` (bytes that may be no UTF-8) in place of each `@`. */
const withRaw = (text: string, raw: number[]) => {
  const parts = text.split('@').map((p) => [...new TextEncoder().encode(p)]);
  return new Uint8Array(parts.flatMap((p, i) => (i === 0 ? p : [...raw, ...p])));
};

describe('an app_id in a query that is not UTF-8', () => {
  it.each([
    ['%FF', '\ufffd'],
    ['%ED%A0%80', '\ufffd\ufffd\ufffd'],
    ['%C0%80', '\ufffd\ufffd'],
    ['a%FFb', 'a\ufffdb'],
  ])('%s: GET and DELETE answer 400, and the application it would read as is untouched', async (encoded, lossy) => {
    const prefix = freshApp();
    // The application URLSearchParams would read: it exists, with a webhook.
    const lossyApp = prefix + lossy;
    expect(new URLSearchParams(`app_id=${encodeURIComponent(prefix)}${encoded}`).get('app_id')).toBe(lossyApp);
    const hook = await hookOf(lossyApp);
    const query = `app_id=${encodeURIComponent(prefix)}${encoded}`;
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await callApplication(method, await adminHeaders(), { query });
      expect(res.headers.get('x-error-detail')).toBe('the query must be UTF-8 once percent-decoded');
      await expectApplicationFail(res, 400);
    }
    expect((await webhooksOf(lossyApp)).map((w) => w.webhook_id)).toEqual([hook]);
    expect(await applicationRow(lossyApp)).toBeNull();
    expect(await applicationAudit(lossyApp)).toEqual([]);
  });

  it('U+FFFD itself, sent as UTF-8 (%EF%BF%BD), is an id like any other', async () => {
    const prefix = freshApp();
    const { value } = await expectValue<{ app_id: string }>(
      await callApplication('GET', await adminHeaders(), { query: `app_id=${encodeURIComponent(prefix)}%EF%BF%BD` }),
    );
    expect(value.app_id).toBe(`${prefix}\ufffd`);
  });

  it('any other query parameter that is not UTF-8 is refused too', async () => {
    const app = freshApp();
    const hook = await hookOf(app);
    const res = await fetchWith(
      {},
      new Request(`https://webhooks.test/v1.0/app/nft/webhook?webhook_id=${hook}&note=%FF`, {
        method: 'DELETE',
        headers: bearer(await tokenFor(app)),
      }),
    );
    expect(res.headers.get('x-error-detail')).toBe('the query must be UTF-8 once percent-decoded');
    await expectEnvelope(res, 400, 64063, 'delete fail');
    expect((await webhooksOf(app)).map((w) => w.webhook_id)).toEqual([hook]);
  });
});

describe('an app_id in a body that is not UTF-8', () => {
  it.each([
    ['FF', [0xff], '\ufffd'],
    ['ED A0 80', [0xed, 0xa0, 0x80], '\ufffd\ufffd\ufffd'],
  ])('PUT of an application with %s: 400, nothing set', async (_, raw, lossy) => {
    const prefix = freshApp();
    const res = await fetchWith(
      {},
      new Request(APPLICATION_URL, {
        method: 'PUT',
        headers: { ...(await adminHeaders()), 'content-type': 'application/json' },
        body: withRaw(`{"app_id": "${prefix}@", "retention_days": 5}`, raw),
      }),
    );
    await expectApplicationFail(res, 400);
    expect(await applicationRow(prefix + lossy)).toBeNull();
    expect(await applicationAudit(prefix + lossy)).toEqual([]);
  });

  it('an event: 400, nothing published to the application it would read as', async () => {
    const prefix = freshApp();
    const lossyApp = `${prefix}\ufffd`;
    await hookOf(lossyApp);
    receiver();
    const res = await fetchWith(
      {},
      new Request(EVENT_URL, {
        method: 'POST',
        headers: { ...bearer(await platformToken()), 'content-type': 'application/json' },
        body: withRaw(`{"app_id": "${prefix}@", "type": "NEW_NFT", "data": {}}`, [0xff]),
      }),
    );
    await expectEventFail(res, 400);
    // Publishing to it for real makes its first event: none came before.
    const { deliveryIds } = await publishEvent(lossyApp);
    expect(deliveryIds).toHaveLength(1);
  });
});

// jose (6.2.17 on) decodes a token's claims strictly: such a token is invalid, whatever claim it is.
describe("a token's claim that is not UTF-8", () => {
  /** A token signed with the test secret whose payload is `payload` as bytes (`@`: the raw bytes). */
  async function rawToken(payload: string, raw: number[]) {
    const head = base64url.encode(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
    const body = base64url.encode(withRaw(payload, raw));
    const key = await crypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(env.JWT_SECRET),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${head}.${body}`));
    return `${head}.${body}.${base64url.encode(new Uint8Array(mac))}`;
  }
  const claims = (sub: string, extra = '') =>
    `{"sub":"${sub}","iss":"${env.JWT_ISSUER}","aud":"${env.JWT_AUDIENCE}","iat":${now()},"exp":${now() + 300}${extra}}`;

  it.each([
    ['FF', [0xff]],
    ['ED A0 80', [0xed, 0xa0, 0x80]],
  ])('the application claim with %s: 401, nothing registered for the application it would read as', async (_, raw) => {
    const prefix = freshApp();
    const lossy = `${prefix}${'\ufffd'.repeat(raw.length)}`;
    // The token is well signed: only its bytes are wrong.
    const token = await rawToken(claims(`${prefix}@`), raw);
    const res = await post({ url: 'https://hooks.example.com/encoding' }, bearer(token));
    expect(res.headers.get('x-error-detail')).toBe('token invalid');
    await expectInvalidToken(res);
    expect(await webhooksOf(lossy)).toEqual([]);
    // The same token, its bytes UTF-8: accepted.
    const good = await rawToken(claims(`${prefix}@`), [...new TextEncoder().encode('\u00e9')]);
    expect((await post({ url: 'https://hooks.example.com/encoding' }, bearer(good))).status).toBe(201);
    expect(await webhooksOf(`${prefix}\u00e9`)).toHaveLength(1);
  });

  it('another claim with bytes that are not UTF-8: 401 all the same', async () => {
    const app = freshApp();
    const token = await rawToken(claims(app, ',"jti":"j@"'), [0xff]);
    const res = await post({ url: 'https://hooks.example.com/encoding' }, bearer(token));
    await expectInvalidToken(res);
    expect(await webhooksOf(app)).toEqual([]);
  });
});
