// Optional whitespace around a header value (RFC 9110 §5.6.3) is not part of it: Authorization,
// Idempotency-Key and X-Request-Id are read without it. workerd's Headers already strips it from
// headers set in code (shown here through SELF.fetch and the Worker's fetch); over the wire it does
// not, which test/http/headers.test.ts shows with raw sockets. The parsers take it off themselves.
import { SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { bearerToken } from '../src/auth/bearer';
import { requestIdOf } from '../src/http/envelope';
import { withoutOws } from '../src/http/headers';
import { parseIdempotencyKey } from '../src/http/params';
import { insertWebhook, snapshot, webhooksOf } from './helpers/database';
import { expectInvalidToken, expectValue, type Webhook } from './helpers/replies';
import { fetchWith, postRequest, URL_ } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

const OWS = [
  ['a trailing space', '', ' '],
  ['a trailing tab', '', '\t'],
  ['spaces and tabs around it', ' \t', '\t  '],
] as const;

/** A Request whose headers hold values exactly as given, as one that came over the wire can. */
const wireRequest = (headers: Record<string, string>) =>
  ({ headers: new Map(Object.entries(headers)) }) as unknown as Request;

describe('withoutOws', () => {
  it('removes SP and HTAB around a value, and nothing else', () => {
    expect(withoutOws(' \t a b\t \t')).toBe('a b');
    expect(withoutOws('abc')).toBe('abc');
    expect(withoutOws(' \t ')).toBe('');
    expect(withoutOws('')).toBe('');
    expect(withoutOws('\u00a0a\n')).toBe('\u00a0a\n');
  });

  it('takes linear time on a long run of spaces', () => {
    const value = `a${' '.repeat(1_000_000)}b${' '.repeat(1_000_000)}`;
    expect(withoutOws(value)).toHaveLength(1_000_002);
  });
});

describe.each(OWS)('a header value with %s', (_, lead, trail) => {
  it('is a valid Authorization header', () => {
    expect(bearerToken(`${lead}Bearer a.b.c${trail}`)).toBe('a.b.c');
    expect(() => bearerToken(`${lead}${trail}`)).toThrow('missing bearer token');
  });

  it('is one Idempotency-Key with the value without it', () => {
    expect(parseIdempotencyKey(`${lead}key-1${trail}`)).toBe('key-1');
    expect(parseIdempotencyKey(`${lead}${trail}`)).toBeNull();
    expect(parseIdempotencyKey(`${lead}my key${trail}`)).toBeNull();
  });

  it('is the X-Request-Id without it', () => {
    expect(requestIdOf(wireRequest({ 'x-request-id': `${lead}req-1${trail}` }))).toBe('req-1');
  });

  describe.each([
    ['SELF.fetch', (req: Request) => SELF.fetch(req)],
    ["the Worker's fetch", (req: Request) => fetchWith({}, req)],
  ])('through %s', (_via, send) => {
    it('authenticates, keeps the key and echoes the request id', async () => {
      const app = freshApp();
      const token = await tokenFor(app);
      const id = await insertWebhook(app);
      const read = await send(
        new Request(`${URL_}?webhook_id=${id}`, {
          headers: { authorization: `${lead}Bearer ${token}${trail}`, 'x-request-id': `${lead}req-ows${trail}` },
        }),
      );
      expect(read.headers.get('x-request-id')).toBe('req-ows');
      expect((await expectValue<Webhook>(read)).value.webhook_id).toBe(Number(id));

      const body = { url: 'https://hooks.example.com/ows' };
      const first = await send(postRequest(body, { ...bearer(token), 'idempotency-key': `${lead}k${trail}` }));
      const { text } = await expectValue(first, 201);
      const before = await snapshot();
      const again = await send(postRequest(body, { ...bearer(token), 'idempotency-key': 'k' }));
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect((await expectValue(again, 201)).text).toBe(text);
      expect(await snapshot()).toEqual(before);
      expect(await webhooksOf(app)).toHaveLength(2);
    });
  });
});

it('still refuses whitespace inside the Authorization token', async () => {
  const token = await tokenFor('ows-inside');
  const [h, p, s] = token.split('.');
  const res = await SELF.fetch(`${URL_}?webhook_id=1`, { headers: { authorization: `Bearer ${h}.${p} .${s}` } });
  await expectInvalidToken(res);
});
