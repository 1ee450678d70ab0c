import { createScheduledController, env, SELF } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PURGE_BATCH } from '../src/core/batches';
import worker from '../src/index';
import { createWebhook } from '../src/webhooks/store/registration';
import { auditRows, countingDb, faultyDb, insertWebhook, snapshot, webhookRow, webhooksOf } from './helpers/database';
import { expectCreateFail, expectValue, type Webhook } from './helpers/replies';
import { del, fetchWith, MAX_BODY_BYTES, MAX_WEBHOOK_BODY_BYTES, post, postRequest, URL_ } from './helpers/requests';
import { auth, bearer, freshApp, tokenFor } from './helpers/tokens';

/** The body limit the docs promise (8 KiB). */

afterEach(() => {
  vi.restoreAllMocks();
});

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('POST /v1.0/app/nft/webhook', () => {
  it('registers a webhook: 201, Location, the webhook as value, the row and its create record', async () => {
    const app = freshApp();
    const res = await post(
      { url: 'https://hooks.example.com/nft' },
      { ...bearer(await tokenFor(app, { jti: 'j-1' })), 'x-request-id': 'req-create-1' },
    );

    const { value } = await expectValue<Webhook>(res, 201);
    const id = String(value.webhook_id);
    expect(res.headers.get('location')).toBe(`/v1.0/app/nft/webhook?webhook_id=${id}`);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(value).toEqual({
      webhook_id: value.webhook_id,
      url: 'https://hooks.example.com/nft',
      destination: { type: 'http' },
      headers: {},
      is_enabled: true,
      event_types: null,
      description: null,
      rate_limit: null,
      filter: null,
      ordering: null,
      created_at: expect.stringMatching(ISO_UTC),
      updated_at: value.created_at,
      disabled_reason: null,
      disabled_at: null,
      failing_since: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const row = await webhookRow(id);
    expect(row).toEqual({
      webhook_id: id,
      app_id: app,
      url: 'https://hooks.example.com/nft',
      is_enabled: 1,
      event_types: null,
      created_at: value.created_at,
      updated_at: value.updated_at,
      description: null,
      rate_limit: null,
    });
    const audit = await auditRows(id);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      action: 'create',
      app_id: app,
      actor: app,
      actor_jti: 'j-1',
      request_id: 'req-create-1',
    });
    expect(JSON.parse(audit[0]!.row_before)).toEqual({
      ...row,
      webhook_id: Number(id),
      filter: null,
      ordering: null,
      disabled_reason: null,
      disabled_at: null,
      destination: null,
      headers: null,
    });
  });

  it('registers a disabled webhook when is_enabled is false, and ignores unknown fields', async () => {
    const app = freshApp();
    const res = await post(
      { url: 'https://hooks.example.com/off', is_enabled: false, app_id: 'someone-else', webhook_id: 1 },
      await auth(app),
    );
    const { value } = await expectValue<Webhook>(res, 201);
    expect(value.is_enabled).toBe(false);
    // Disabled by the application, since it was registered.
    expect(value).toMatchObject({ disabled_reason: 'application', disabled_at: value.created_at });
    expect(await webhookRow(String(value.webhook_id))).toMatchObject({ app_id: app, is_enabled: 0 });
    const stored = await env.DB.prepare('SELECT disabled_reason, disabled_at FROM webhooks WHERE webhook_id = ?1')
      .bind(value.webhook_id)
      .first();
    expect(stored).toEqual({ disabled_reason: 'application', disabled_at: value.created_at });
  });

  it.each([
    ['HTTPS://Hooks.Example.COM:443/a/../b?x=1', 'https://hooks.example.com/b?x=1'],
    ['https://hooks.example.com', 'https://hooks.example.com/'],
    ['https://hooks.example.com:8443/p q', 'https://hooks.example.com:8443/p%20q'],
    ['https://bücher.example/hook', 'https://xn--bcher-kva.example/hook'],
    ['https://hooks.example.com./x', 'https://hooks.example.com./x'],
    ['https://8.8.8.8/hook', 'https://8.8.8.8/hook'],
    ['https://[2606:4700:4700::1111]/hook', 'https://[2606:4700:4700::1111]/hook'],
    ['  https://hooks.example.com/trimmed  ', 'https://hooks.example.com/trimmed'],
    ['https://test.invalid-onion.example.com:1/x.test', 'https://test.invalid-onion.example.com:1/x.test'],
    ['https://hooks.contest/x', 'https://hooks.contest/x'],
  ])('stores %s in its normalised form %s', async (sent, stored) => {
    const res = await post({ url: sent }, await auth(freshApp()));
    const { value } = await expectValue<Webhook>(res, 201);
    expect(value.url).toBe(stored);
    expect((await webhookRow(String(value.webhook_id)))?.url).toBe(stored);
  });

  it.each([
    ['http', 'http://hooks.example.com/x'],
    ['ftp', 'ftp://hooks.example.com/x'],
    ['a relative URL', '/v1.0/hook'],
    ['not a URL', 'hooks.example.com'],
    ['javascript', 'javascript:alert(1)'],
    ['data', 'data:text/plain,hi'],
    ['a user name', 'https://user@hooks.example.com/'],
    ['a password', 'https://user:pw@hooks.example.com/'],
    ['a fragment', 'https://hooks.example.com/x#frag'],
    ['an empty fragment', 'https://hooks.example.com/x#'],
    ['a single-label host', 'https://intranet/x'],
    ['localhost', 'https://localhost/x'],
    ['localhost with a trailing dot', 'https://localhost./x'],
    ['a name under .localhost', 'https://api.localhost/x'],
    ['a name under .local', 'https://printer.local/x'],
    ['a name under .internal', 'https://db.corp.internal/x'],
    ['a name under .internal with a trailing dot', 'https://db.internal./x'],
    ['a name under .test', 'https://hook.test/x'],
    ['a name under .test with a trailing dot', 'https://hook.test./x'],
    ['a name under .test in upper case', 'https://HOOK.TEST/x'],
    ['a name under .invalid', 'https://hooks.example.invalid/x'],
    ['a name under .invalid with a trailing dot', 'https://hook.invalid./x'],
    ['a name under .invalid in upper case', 'https://HOOK.INVALID/x'],
    ['an onion service', 'https://expyuzz4wqqyqhjn.onion/x'],
    ['an onion service with a trailing dot', 'https://hook.onion./x'],
    ['an onion service in upper case', 'https://HOOK.ONION/x'],
    ['port 0', 'https://hooks.example.com:0/x'],
    ['port 0 written 00', 'https://hooks.example.com:00/x'],
    ['port 0 on an IP address', 'https://8.8.8.8:0/x'],
    ['loopback', 'https://127.0.0.1/x'],
    ['loopback elsewhere in 127/8', 'https://127.8.9.10/x'],
    ['loopback as one number', 'https://2130706433/x'],
    ['loopback in hex', 'https://0x7f.1/x'],
    ['loopback in octal', 'https://0177.0.0.1/x'],
    ['loopback shortened', 'https://127.1/x'],
    ['private 10/8', 'https://10.1.2.3/x'],
    ['private 172.16/12', 'https://172.20.0.1/x'],
    ['private 192.168/16', 'https://192.168.1.1/x'],
    ['private 192.168/16 as one number', 'https://3232235777/x'],
    ['link-local (cloud metadata)', 'https://169.254.169.254/latest'],
    ['carrier-grade NAT', 'https://100.64.0.1/x'],
    ['unspecified', 'https://0.0.0.0/x'],
    ['0/8', 'https://0.1.2.3/x'],
    ['multicast', 'https://224.0.0.1/x'],
    ['broadcast', 'https://255.255.255.255/x'],
    ['reserved 240/4', 'https://240.0.0.1/x'],
    ['documentation 192.0.2/24', 'https://192.0.2.1/x'],
    ['benchmarking 198.18/15', 'https://198.18.0.1/x'],
    ['IPv6 loopback', 'https://[::1]/x'],
    ['IPv6 unspecified', 'https://[::]/x'],
    ['IPv6 link-local', 'https://[fe80::1]/x'],
    ['IPv6 unique-local', 'https://[fd00::1]/x'],
    ['IPv6 unique-local fc00::/7', 'https://[fc12:3456::1]/x'],
    ['IPv6 multicast', 'https://[ff02::1]/x'],
    ['IPv6 documentation', 'https://[2001:db8::1]/x'],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/x'],
    ['IPv4-mapped loopback in hex', 'https://[::ffff:7f00:1]/x'],
    ['IPv4-mapped private', 'https://[::ffff:10.0.0.1]/x'],
    ['IPv4-compatible loopback', 'https://[::127.0.0.1]/x'],
    ['NAT64 of loopback', 'https://[64:ff9b::7f00:1]/x'],
    ['6to4 of loopback', 'https://[2002:7f00:1::]/x'],
    ['an empty string', ''],
    ['longer than 2,048 characters', `https://hooks.example.com/${'a'.repeat(2048)}`],
    ['2,048 characters that normalise longer', `https://hooks.example.com/${' '.repeat(2000)}x`],
    // The parser would store U+FFFD (%EF%BF%BD) for it: another URL than the one sent.
    ['a lone surrogate', 'https://hooks.example.com/\ud800'],
  ])('refuses a URL with %s: 400 and nothing stored', async (_, url) => {
    const app = freshApp();
    const before = await snapshot();
    const res = await post({ url }, await auth(app));
    expect(res.headers.get('x-error-detail')).toMatch(/^url /);
    await expectCreateFail(res, 400);
    expect(await snapshot()).toEqual(before);
  });

  it.each([
    [
      'http://127.0.0.1:9999/hook',
      'url must use https: http://127.0.0.1:9999 is not one of the local receivers this service is set up to reach',
    ],
    [
      'http://localhost:8791/hook',
      'url must use https: http://localhost:8791 is not one of the local receivers this service is set up to reach',
    ],
    [
      'https://127.0.0.1:8790/hook',
      'url host is not a public address: https://127.0.0.1:8790 is not one of the local receivers this service is set up to reach',
    ],
    [
      'https://receiver.local:8790/hook',
      'url host is not a public DNS name: https://receiver.local:8790 is not one of the local receivers this service is set up to reach',
    ],
  ])(
    'says that %s is not a local receiver it may reach when WEBHOOK_URL_ALLOWED_ORIGINS is set, never naming the setting: 400',
    async (url, detail) => {
      const app = freshApp();
      const local = { WEBHOOK_URL_ALLOWED_ORIGINS: 'http://127.0.0.1:8790 http://localhost:8790' };
      const res = await fetchWith(local, postRequest({ url }, await auth(app)));
      expect(res.headers.get('x-error-detail')).toBe(detail);
      expect(res.headers.get('x-error-detail')).not.toContain('WEBHOOK_URL_ALLOWED_ORIGINS');
      await expectCreateFail(res, 400);
      // Without the setting, only the rule is named.
      const plain = await post({ url }, await auth(app));
      expect(plain.headers.get('x-error-detail')).toBe(detail.split(': ')[0]);
      await expectCreateFail(plain, 400);
    },
  );

  it('accepts a URL of exactly 2,048 characters', async () => {
    const url = `https://hooks.example.com/${'a'.repeat(2048 - 'https://hooks.example.com/'.length)}`;
    expect(url).toHaveLength(2048);
    await expectValue(await post({ url }, await auth(freshApp())), 201);
  });

  it('counts a description in code points: 256 emoji (512 UTF-16 units) pass, 257 do not', async () => {
    const app = freshApp();
    const emoji = '😀'.repeat(256);
    const created = await expectValue<Webhook & { description: string }>(
      await post({ url: 'https://hooks.example.com/emoji', description: emoji }, await auth(app)),
      201,
    );
    expect(created.value.description).toBe(emoji);
    expect((await webhookRow(String(created.value.webhook_id)))?.description).toBe(emoji);
    const over = await post({ url: 'https://hooks.example.com/emoji2', description: `${emoji}😀` }, await auth(app));
    await expectCreateFail(over, 400);
  });

  it.each([
    ['200 lone surrogates', '\ud800'.repeat(200)],
    ['one lone high surrogate after text', 'ok \ud83d'],
    ['one lone low surrogate', '\udc00'],
    ['a pair in the wrong order', '\ude00\ud83d'],
  ])('refuses a description of %s (JSON escapes): 400, never stored as U+FFFD', async (_, description) => {
    const before = await snapshot();
    const res = await post({ url: 'https://hooks.example.com/lone', description }, await auth(freshApp()));
    expect(res.headers.get('x-error-detail')).toBe('description must be well-formed Unicode');
    await expectCreateFail(res, 400);
    expect(await snapshot()).toEqual(before);
  });

  it('refuses a body that is not UTF-8 (an encoded surrogate, a lone continuation byte): 400, nothing stored', async () => {
    const headers = { ...(await auth(freshApp())), 'content-type': 'application/json' };
    const before = await snapshot();
    const text = new TextEncoder().encode('{"url":"https://hooks.example.com/bytes","description":"__"}');
    const at = text.indexOf(0x5f);
    // CESU-style bytes of U+D800 (ED A0 80), which UTF-8 forbids, and a lone continuation byte.
    for (const bad of [[0xed, 0xa0, 0x80], [0x80]]) {
      const body = new Uint8Array([...text.slice(0, at), ...bad, ...text.slice(at + 2)]);
      const res = await SELF.fetch(URL_, { method: 'POST', headers, body });
      expect(res.headers.get('x-error-detail')).toBe('body is not valid UTF-8');
      await expectCreateFail(res, 400);
    }
    expect(await snapshot()).toEqual(before);
  });

  it.each([
    ['invalid JSON', '{"url": '],
    ['a JSON array', '["https://hooks.example.com/"]'],
    ['JSON null', 'null'],
    ['a JSON string', '"https://hooks.example.com/"'],
    ['no url', '{"is_enabled": true}'],
    ['url null', '{"url": null}'],
    ['url a number', '{"url": 5}'],
    ['url an object', '{"url": {"href": "https://hooks.example.com/"}}'],
    ['url an array', '{"url": ["https://hooks.example.com/"]}'],
    ['is_enabled a string', '{"url": "https://hooks.example.com/", "is_enabled": "true"}'],
    ['is_enabled a number', '{"url": "https://hooks.example.com/", "is_enabled": 1}'],
    ['is_enabled null', '{"url": "https://hooks.example.com/", "is_enabled": null}'],
    ['an empty body', ''],
  ])('answers 400 for %s and changes nothing', async (_, body) => {
    const before = await snapshot();
    await expectCreateFail(await post(body, await auth(freshApp())), 400);
    expect(await snapshot()).toEqual(before);
  });

  it.each([
    ['arrays', `{"url": "https://hooks.example.com/deep", "x": ${'['.repeat(2600)}${']'.repeat(2600)}}`],
    ['objects', `{"url": "https://hooks.example.com/deep", "x": ${'{"":'.repeat(1500)}1${'}'.repeat(1500)}}`],
    ['arrays at the top', `${'['.repeat(2600)}${']'.repeat(2600)}`],
    ['33 levels', `{"url": "https://hooks.example.com/deep", "x": ${'['.repeat(32)}${']'.repeat(32)}}`],
  ])('answers 400 for a body of %s nested too deeply, and changes nothing', async (_, body) => {
    expect(new TextEncoder().encode(body).byteLength).toBeLessThanOrEqual(MAX_BODY_BYTES);
    const before = await snapshot();
    const res = await post(body, { ...(await auth(freshApp())), 'idempotency-key': 'deep' });
    await expectCreateFail(res, 400);
    expect(res.headers.get('x-error-detail')).toBe('body nested too deeply');
    expect(await snapshot()).toEqual(before);
  });

  it('answers 415 for a body that is not JSON, and 413 for one over the limit', async () => {
    const headers = await auth(freshApp());
    const before = await snapshot();
    const plain = await SELF.fetch(URL_, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'text/plain' },
      body: '{"url":"https://hooks.example.com/"}',
    });
    await expectCreateFail(plain, 415);
    const big = JSON.stringify({ url: 'https://hooks.example.com/', pad: 'x'.repeat(MAX_WEBHOOK_BODY_BYTES) });
    await expectCreateFail(await post(big, headers), 413);
    expect(await snapshot()).toEqual(before);
  });

  it('answers 401 before looking at the body', async () => {
    const res = await post('not json', { authorization: 'Bearer a.b.c' });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ return: 20004, message: 'Invalid jwt token' });
  });

  describe('one URL per application', () => {
    it('answers 409 for a URL the application registered, compared in normalised form', async () => {
      const app = freshApp();
      const headers = await auth(app);
      await expectValue(await post({ url: 'https://hooks.example.com/dup' }, headers), 201);
      const before = await snapshot();

      await expectCreateFail(await post({ url: 'HTTPS://HOOKS.example.com:443/dup' }, headers), 409);
      expect(await snapshot()).toEqual(before);
    });

    it('lets another application register the same URL, and the owner again once deleted', async () => {
      const app = freshApp();
      const url = 'https://hooks.example.com/shared';
      const first = await expectValue<Webhook>(await post({ url }, await auth(app)), 201);
      await expectValue(await post({ url }, await auth(freshApp())), 201);
      await del(`webhook_id=${first.value.webhook_id}`, await auth(app));
      await expectValue(await post({ url }, await auth(app)), 201);
    });

    it('answers 409 against legacy rows that already repeat a URL, and stores nothing', async () => {
      const app = freshApp();
      const url = 'https://hooks.example.com/legacy';
      await insertWebhook(app, { url });
      await insertWebhook(app, { url });
      await expectCreateFail(await post({ url }, await auth(app)), 409);
      expect(await webhooksOf(app)).toHaveLength(2);
    });

    it('creates exactly one webhook when many POSTs of one URL race', async () => {
      const app = freshApp();
      const token = await tokenFor(app);
      const replies = await Promise.all(
        Array.from({ length: 12 }, () =>
          SELF.fetch(postRequest({ url: 'https://hooks.example.com/race' }, bearer(token))),
        ),
      );
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses).toEqual([201, ...Array(11).fill(409)]);
      expect(await webhooksOf(app)).toHaveLength(1);
    });
  });

  describe('WEBHOOKS_PER_APP', () => {
    it('answers 409 past the cap, and accepts again once one is deleted', async () => {
      const app = freshApp();
      const token = await tokenFor(app);
      const send = (n: number) =>
        fetchWith({ WEBHOOKS_PER_APP: '3' }, postRequest({ url: `https://h.example.com/${n}` }, bearer(token)));
      const ids: number[] = [];
      for (const n of [1, 2, 3]) ids.push((await expectValue<Webhook>(await send(n), 201)).value.webhook_id);
      const before = await snapshot();
      await expectCreateFail(await send(4), 409);
      expect(await snapshot()).toEqual(before);
      await del(`webhook_id=${ids[0]}`, bearer(token));
      await expectValue(await send(4), 201);
    });

    it('holds under concurrency: exactly the cap succeeds', async () => {
      const app = freshApp();
      const token = await tokenFor(app);
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, n) =>
          fetchWith({ WEBHOOKS_PER_APP: '5' }, postRequest({ url: `https://h.example.com/c${n}` }, bearer(token))),
        ),
      );
      const statuses = replies.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(5);
      expect(statuses.filter((s) => s === 409)).toHaveLength(7);
      expect(await webhooksOf(app)).toHaveLength(5);
    });

    it('defaults to 100', async () => {
      const app = freshApp();
      const values = Array.from({ length: 100 }, (_, n) => `('${app}', 'https://h.example.com/${n}')`);
      await env.DB.exec(`INSERT INTO webhooks (app_id, url) VALUES ${values.join(',')}`);
      await expectCreateFail(await post({ url: 'https://h.example.com/101' }, await auth(app)), 409);
      await env.DB.prepare('DELETE FROM webhooks WHERE app_id = ?1 AND url = ?2')
        .bind(app, 'https://h.example.com/0')
        .run();
      await expectValue(await post({ url: 'https://h.example.com/101' }, await auth(app)), 201);
    });

    it.each(['0', '-1', 'ten', '1.5', '99999999'])('fails closed on WEBHOOKS_PER_APP=%s', async (setting) => {
      vi.spyOn(console, 'error').mockImplementation(() => {});
      const res = await fetchWith(
        { WEBHOOKS_PER_APP: setting },
        postRequest({ url: 'https://h.example.com/x' }, await auth(freshApp())),
      );
      await expectCreateFail(res, 500);
    });
  });

  describe('Idempotency-Key', () => {
    const keyed = async (app: string, key: string) => ({ ...(await auth(app)), 'idempotency-key': key });

    it('answers a repeat with the first reply, marked replayed, and creates nothing', async () => {
      const app = freshApp();
      const headers = await keyed(app, 'key-1');
      const body = '{"url":"https://hooks.example.com/idem"}';
      const first = await post(body, headers);
      const firstText = await first.clone().text();
      const { value } = await expectValue<Webhook>(first, 201);
      const before = await snapshot();

      const again = await post(body, headers);
      expect(await again.clone().text()).toBe(firstText);
      await expectValue(again, 201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('location')).toBe(first.headers.get('location'));
      expect(await snapshot()).toEqual(before);
      expect(await webhooksOf(app)).toHaveLength(1);
      expect(value.url).toBe('https://hooks.example.com/idem');
    });

    it('replays even after the webhook was deleted or the cap reached', async () => {
      const app = freshApp();
      const token = await tokenFor(app);
      const send = (key: string, url: string) =>
        fetchWith({ WEBHOOKS_PER_APP: '1' }, postRequest({ url }, { ...bearer(token), 'idempotency-key': key }));
      const first = await send('k', 'https://hooks.example.com/a');
      const { text } = await expectValue<Webhook>(first, 201);
      const id = JSON.parse(text).value.webhook_id;
      // The cap (1) is reached: the same request is still its first reply.
      expect(await (await send('k', 'https://hooks.example.com/a')).text()).toBe(text);
      await del(`webhook_id=${id}`, bearer(token));
      const replay = await send('k', 'https://hooks.example.com/a');
      expect(replay.status).toBe(201);
      expect(await replay.text()).toBe(text);
      expect(await webhooksOf(app)).toHaveLength(0);
    });

    it('answers 422 for the same key with another body, before any other conflict', async () => {
      const app = freshApp();
      const headers = await keyed(app, 'key-2');
      await expectValue(await post({ url: 'https://hooks.example.com/one' }, headers), 201);
      const before = await snapshot();
      // Same URL, other bytes: a different request.
      await expectCreateFail(await post('{"url": "https://hooks.example.com/one"}', headers), 422);
      // A body that would also be a duplicate: still 422.
      await expectCreateFail(await post({ url: 'https://hooks.example.com/one', is_enabled: true }, headers), 422);
      expect(await snapshot()).toEqual(before);
    });

    it('keeps keys per application', async () => {
      const a = freshApp();
      const b = freshApp();
      const body = { url: 'https://hooks.example.com/per-app' };
      const ra = await expectValue<Webhook>(await post(body, await keyed(a, 'same')), 201);
      const rb = await post(body, await keyed(b, 'same'));
      expect(rb.headers.get('idempotent-replayed')).toBeNull();
      const vb = await expectValue<Webhook>(rb, 201);
      expect(vb.value.webhook_id).not.toBe(ra.value.webhook_id);
      expect(await webhooksOf(b)).toHaveLength(1);
    });

    it('stores nothing for a failed request: the key stays free', async () => {
      const app = freshApp();
      const url = 'https://hooks.example.com/taken';
      await expectValue(await post({ url }, await auth(app)), 201);
      const headers = await keyed(app, 'key-3');
      await expectCreateFail(await post({ url }, headers), 409);
      await expectCreateFail(await post({ url: 'http://insecure.example.com/' }, headers), 400);
      expect(
        (await env.DB.prepare('SELECT COUNT(*) AS n FROM idempotency_keys WHERE app_id = ?1').bind(app).first())?.n,
      ).toBe(0);
      await expectValue(await post({ url: 'https://hooks.example.com/free' }, headers), 201);
    });

    it('forgets a key after 24 hours', async () => {
      const app = freshApp();
      const headers = await keyed(app, 'old-key');
      await expectValue(await post({ url: 'https://hooks.example.com/old' }, headers), 201);
      await env.DB.prepare(
        `UPDATE idempotency_keys SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-24 hours', '-1 second')
         WHERE app_id = ?1`,
      )
        .bind(app)
        .run();
      const res = await post({ url: 'https://hooks.example.com/new' }, headers);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
      await expectValue(res, 201);
      expect(await webhooksOf(app)).toHaveLength(2);
    });

    it.each([
      ['empty', ''],
      ['256 characters', 'k'.repeat(256)],
      ['a space', 'my key'],
      ['a tab', 'my\tkey'],
      ['non-ASCII', 'clé'],
    ])('answers 400 for a key that is %s, and stores nothing', async (_, key) => {
      const before = await snapshot();
      const req = postRequest({ url: 'https://hooks.example.com/k' }, await auth(freshApp()));
      req.headers.set('idempotency-key', key);
      await expectCreateFail(await SELF.fetch(req), 400);
      expect(await snapshot()).toEqual(before);
    });

    it('accepts a key of 255 visible characters', async () => {
      const key = `${'!~'.repeat(127)}x`;
      expect(key).toHaveLength(255);
      await expectValue(await post({ url: 'https://hooks.example.com/long-key' }, await keyed(freshApp(), key)), 201);
    });
  });

  describe('storage retries', () => {
    it('answers 201 with its own webhook when the first attempt committed and its reply was lost', async () => {
      vi.spyOn(console, 'warn').mockImplementation(() => {});
      const app = freshApp();
      const { db, calls } = faultyDb([{ after: 'D1_ERROR: Network connection lost.' }]);

      const res = await fetchWith({ DB: db }, postRequest({ url: 'https://hooks.example.com/retry' }, await auth(app)));

      const { value } = await expectValue<Webhook>(res, 201);
      expect(calls()).toBe(2);
      const rows = await webhooksOf(app);
      expect(rows.map((r) => r.webhook_id)).toEqual([String(value.webhook_id)]);
      expect(await auditRows(String(value.webhook_id))).toHaveLength(1);
    });

    it('does the same with an Idempotency-Key: one webhook, one key, not a replay', async () => {
      vi.spyOn(console, 'warn').mockImplementation(() => {});
      const app = freshApp();
      const { db } = faultyDb([{ after: 'D1_ERROR: Network connection lost.' }]);
      const req = postRequest(
        { url: 'https://hooks.example.com/retry-key' },
        { ...(await auth(app)), 'idempotency-key': 'r' },
      );

      const res = await fetchWith({ DB: db }, req);

      await expectValue(res, 201);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
      expect(await webhooksOf(app)).toHaveLength(1);
      const keys = await env.DB.prepare('SELECT COUNT(*) AS n FROM idempotency_keys WHERE app_id = ?1')
        .bind(app)
        .first();
      expect(keys?.n).toBe(1);
    });

    it('never makes a second webhook on a retry, even when the first was deleted in between', async () => {
      const app = freshApp();
      const hook = {
        url: 'https://hooks.example.com/gone',
        enabled: true,
        eventTypes: null,
        description: null,
        rateLimit: null,
        sealedSecret: 'v1.sealed',
        cap: 100,
        writeId: crypto.randomUUID(),
      };
      const actor = { appId: app, jti: null, requestId: 'r' };
      const first = await createWebhook(env.DB, hook, actor);
      expect(first.outcome).toBe('created');
      const id = (first as { webhook: { id: string } }).webhook.id;
      await env.DB.prepare('DELETE FROM webhooks WHERE webhook_id = ?1').bind(id).run();

      expect(await createWebhook(env.DB, hook, actor)).toEqual(first);
      expect(await webhooksOf(app)).toEqual([]);
    });

    it('retries a create that failed before running', async () => {
      vi.spyOn(console, 'warn').mockImplementation(() => {});
      const app = freshApp();
      const { db, calls } = faultyDb([{ before: 'D1_ERROR: D1 DB reset because its code was updated.' }]);
      await expectValue(
        await fetchWith({ DB: db }, postRequest({ url: 'https://hooks.example.com/r2' }, await auth(app))),
        201,
      );
      expect(calls()).toBe(2);
      expect(await webhooksOf(app)).toHaveLength(1);
    });
  });

  it('uses one D1 round trip for a create, a replay, a 422, a duplicate and a full application', async () => {
    const app = freshApp();
    const token = await tokenFor(app);
    const cases: [Record<string, string>, unknown, number][] = [
      [{ 'idempotency-key': 'c' }, { url: 'https://hooks.example.com/1' }, 201],
      [{ 'idempotency-key': 'c' }, { url: 'https://hooks.example.com/1' }, 201],
      [{ 'idempotency-key': 'c' }, { url: 'https://hooks.example.com/2' }, 422],
      [{}, { url: 'https://hooks.example.com/1' }, 409],
      [{}, { url: 'https://hooks.example.com/3' }, 201],
      [{}, { url: 'https://hooks.example.com/4' }, 409],
    ];
    for (const [extra, body, status] of cases) {
      const { db, calls } = countingDb(env.DB);
      const res = await fetchWith({ DB: db, WEBHOOKS_PER_APP: '2' }, postRequest(body, { ...bearer(token), ...extra }));
      expect(res.status).toBe(status);
      expect(calls()).toBe(1);
    }
  });

  it('touches no storage for input it rejects', async () => {
    const { db, calls } = countingDb(env.DB);
    const res = await fetchWith({ DB: db }, postRequest({ url: 'https://127.0.0.1/' }, await auth(freshApp())));
    await expectCreateFail(res, 400);
    expect(calls()).toBe(0);
  });

  it('writes an id above 2^53 with its exact digits, in value and Location', async () => {
    const app = freshApp();
    await env.DB.prepare(`UPDATE sqlite_sequence SET seq = 9007199254740992 WHERE name = 'webhooks'`).run();
    const res = await post({ url: 'https://hooks.example.com/big' }, await auth(app));
    const { text } = await expectValue(res, 201);
    expect(text).toContain('"webhook_id":9007199254740993,');
    expect(res.headers.get('location')).toBe('/v1.0/app/nft/webhook?webhook_id=9007199254740993');
    expect((await webhookRow('9007199254740993'))?.app_id).toBe(app);
  });
});

describe('the Cron Trigger', () => {
  it('purges Idempotency-Keys older than 24 hours and keeps the others', async () => {
    const info = vi.spyOn(console, 'info').mockImplementation(() => {});
    const app = freshApp();
    for (const key of ['fresh', 'old-1', 'old-2']) {
      await expectValue(
        await post({ url: `https://hooks.example.com/${key}` }, { ...(await auth(app)), 'idempotency-key': key }),
        201,
      );
    }
    await env.DB.prepare(
      `UPDATE idempotency_keys SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-25 hours')
       WHERE app_id = ?1 AND idem_key LIKE 'old-%'`,
    )
      .bind(app)
      .run();

    await worker.scheduled(createScheduledController({ cron: '17 * * * *' }), env);

    const { results } = await env.DB.prepare('SELECT idem_key FROM idempotency_keys WHERE app_id = ?1').bind(app).all();
    expect(results).toEqual([{ idem_key: 'fresh' }]);
    const line = info.mock.calls
      .map((c) => JSON.parse(String(c[0])))
      .find((l) => l.msg === 'cron: expired idempotency keys purged');
    expect(line).toMatchObject({ rows: 2, cron: '17 * * * *' });
    // The webhooks those keys made are not touched.
    expect(await webhooksOf(app)).toHaveLength(3);
  });

  it('purges in as many batches as it takes: more than 2 × PURGE_BATCH expired keys in one run', async () => {
    const info = vi.spyOn(console, 'info').mockImplementation(() => {});
    const app = freshApp();
    const expired = 2 * PURGE_BATCH + 345;
    const fresh = 25;
    // Keys n = 1..expired are 25 hours old or older; the next `fresh` are an hour old.
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2 + ?3)
       INSERT INTO idempotency_keys (app_id, idem_key, request_hash, webhook_id, webhook_row, created_at)
       SELECT ?1, 'k-' || i, 'hash', i, '{}',
              strftime('%Y-%m-%dT%H:%M:%fZ', 'now', CASE WHEN i <= ?2 THEN '-25 hours' ELSE '-1 hours' END,
                       '-' || i || ' seconds')
       FROM n`,
    )
      .bind(app, expired, fresh)
      .run();
    const count = async (where: string) =>
      (await env.DB.prepare(`SELECT count(*) AS n FROM idempotency_keys WHERE ${where}`).first<{ n: number }>())?.n;
    const old = `created_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-24 hours')`;
    const expiredBefore = await count(old);
    expect(expiredBefore).toBeGreaterThanOrEqual(expired);
    expect(await count(`app_id = '${app}'`)).toBe(expired + fresh);

    await worker.scheduled(createScheduledController({ cron: '17 * * * *' }), env);

    expect(await count(old)).toBe(0);
    const { results } = await env.DB.prepare(
      'SELECT idem_key FROM idempotency_keys WHERE app_id = ?1 ORDER BY created_at',
    )
      .bind(app)
      .all<{ idem_key: string }>();
    expect(results.map((r) => r.idem_key)).toEqual(Array.from({ length: fresh }, (_, i) => `k-${expired + fresh - i}`));
    const line = info.mock.calls
      .map((c) => JSON.parse(String(c[0])))
      .find((l) => l.msg === 'cron: expired idempotency keys purged');
    expect(line).toMatchObject({ rows: expiredBefore });
  });
});
