import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { auditRows, countingDb, insertWebhook, snapshot, webhookRow } from './helpers/database';
import { expectSuccess, expectUpdateFail } from './helpers/replies';
import { fetchWith, MAX_BODY_BYTES, put, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

/** The body limit the docs promise (8 KiB). */

describe('PUT /v1.0/app/nft/webhook', () => {
  it('disables an enabled webhook and records the row before the change', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const before = await webhookRow(id);
    const token = await tokenFor('app-a', { jti: 'jti-7' });

    const res = await put(
      { webhook_id: Number(id), is_enabled: false },
      { ...bearer(token), 'x-request-id': 'req-put-1' },
    );

    await expectSuccess(res);
    expect(res.headers.get('x-request-id')).toBe('req-put-1');
    expect((await webhookRow(id))?.is_enabled).toBe(0);
    const audit = await auditRows(id);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      app_id: 'app-a',
      action: 'disable',
      actor: 'app-a',
      actor_jti: 'jti-7',
      request_id: 'req-put-1',
    });
    expect(JSON.parse(audit[0]!.row_before)).toEqual({
      ...before,
      webhook_id: Number(id),
      filter: null,
      ordering: null,
      disabled_reason: null,
      disabled_at: null,
      destination: null,
      headers: null,
    });
  });

  it('records why and when: the application disabling it, a service reason kept by another disable, cleared by enable', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const headers = bearer(await tokenFor('app-a'));
    const reason = () =>
      env.DB.prepare('SELECT is_enabled, disabled_reason, disabled_at, updated_at FROM webhooks WHERE webhook_id = ?1')
        .bind(Number(id))
        .first<{
          is_enabled: number;
          disabled_reason: string | null;
          disabled_at: string | null;
          updated_at: string;
        }>();

    const res = await put({ webhook_id: id, is_enabled: false }, headers);
    // PUT's own reply does not change: the envelope without a value.
    expect(await res.clone().json()).toEqual({ return: 0, message: 'success' });
    await expectSuccess(res);
    const disabled = await reason();
    expect(disabled).toMatchObject({ is_enabled: 0, disabled_reason: 'application' });
    expect(disabled?.disabled_at).toBe(disabled?.updated_at);

    // Disabled by the service (410 Gone): disabling it again keeps that reason and time.
    await env.DB.prepare(
      `UPDATE webhooks SET disabled_reason = 'gone', disabled_at = '2026-01-01T00:00:00.000Z' WHERE webhook_id = ?1`,
    )
      .bind(Number(id))
      .run();
    await expectSuccess(await put({ webhook_id: id, is_enabled: false }, headers));
    expect(await reason()).toMatchObject({ disabled_reason: 'gone', disabled_at: '2026-01-01T00:00:00.000Z' });

    await expectSuccess(await put({ webhook_id: id, is_enabled: true }, headers));
    expect(await reason()).toMatchObject({ is_enabled: 1, disabled_reason: null, disabled_at: null });
  });

  it('enables a disabled webhook', async () => {
    const id = await insertWebhook('app-a', { enabled: false });

    await expectSuccess(await put({ webhook_id: id, is_enabled: true }, bearer(await tokenFor('app-a'))));

    expect((await webhookRow(id))?.is_enabled).toBe(1);
    const audit = await auditRows(id);
    expect(audit.map((a) => a.action)).toEqual(['enable']);
    expect(audit[0]?.actor_jti).toBeNull();
  });

  it('answers success for the state the webhook already has, and records nothing', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const before = await snapshot();

    await expectSuccess(await put({ webhook_id: id, is_enabled: true }, bearer(await tokenFor('app-a'))));

    expect(await snapshot()).toEqual(before);
  });

  it('changes nothing without is_enabled, and answers success for the caller’s webhook', async () => {
    const id = await insertWebhook('app-a', { enabled: false });
    const before = await snapshot();

    await expectSuccess(await put({ webhook_id: id }, bearer(await tokenFor('app-a'))));

    expect(await snapshot()).toEqual(before);
  });

  it('answers 404 without is_enabled for a webhook that is not the caller’s', async () => {
    const id = await insertWebhook('app-b');
    await expectUpdateFail(await put({ webhook_id: id }, bearer(await tokenFor('app-a'))), 404);
  });

  it('answers 404 for another application’s webhook and leaves it as it was', async () => {
    const id = await insertWebhook('app-b', { enabled: true });
    const before = await snapshot();

    await expectUpdateFail(await put({ webhook_id: id, is_enabled: false }, bearer(await tokenFor('app-a'))), 404);

    expect(await snapshot()).toEqual(before);
  });

  it('answers a foreign webhook exactly like a missing one', async () => {
    const foreign = await insertWebhook('app-b');
    const token = await tokenFor('app-a');
    const a = await put({ webhook_id: foreign, is_enabled: false }, bearer(token));
    const b = await put({ webhook_id: '987654321', is_enabled: false }, bearer(token));

    expect([a.status, await a.text()]).toEqual([b.status, await b.text()]);
    expect([...a.headers.keys()].sort()).toEqual([...b.headers.keys()].sort());
  });

  it('answers 404 for a webhook its owner deleted', async () => {
    const id = await insertWebhook('app-a');
    const token = await tokenFor('app-a');
    await SELF.fetch(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(token) });

    await expectUpdateFail(await put({ webhook_id: id, is_enabled: false }, bearer(token)), 404);
  });

  it('records every real change in order', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const token = await tokenFor('app-a');
    for (const state of [false, false, true, true, false]) {
      await expectSuccess(await put({ webhook_id: id, is_enabled: state }, bearer(token)));
    }
    expect((await auditRows(id)).map((a) => a.action)).toEqual(['disable', 'enable', 'disable']);
  });

  it('ignores unknown fields', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    await expectSuccess(
      await put(
        { webhook_id: id, is_enabled: false, url: 'https://evil.example', app_id: 'app-b' },
        bearer(await tokenFor('app-a')),
      ),
    );
    expect(await webhookRow(id)).toMatchObject({ is_enabled: 0, app_id: 'app-a', url: 'https://app-a.example/hook' });
  });

  it.each([
    ['content-type with parameters', 'application/json; charset=utf-8'],
    ['content-type in other case', 'Application/JSON'],
  ])('accepts a %s', async (_, type) => {
    const id = await insertWebhook('app-a', { enabled: true });
    const res = await SELF.fetch(URL_, {
      method: 'PUT',
      headers: { ...bearer(await tokenFor('app-a')), 'content-type': type },
      body: JSON.stringify({ webhook_id: id, is_enabled: false }),
    });
    await expectSuccess(res);
    expect((await webhookRow(id))?.is_enabled).toBe(0);
  });

  it('accepts a body sent without Content-Length (chunked)', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const body = new Blob([JSON.stringify({ webhook_id: id, is_enabled: false })]).stream();
    const res = await SELF.fetch(URL_, {
      method: 'PUT',
      headers: { ...bearer(await tokenFor('app-a')), 'content-type': 'application/json' },
      body,
    });
    await expectSuccess(res);
    expect((await webhookRow(id))?.is_enabled).toBe(0);
  });

  const ID = '__ID__';
  it.each([
    ['an empty body', ''],
    ['invalid JSON', '{"webhook_id": __ID__, '],
    ['a JSON array', '[__ID__]'],
    ['JSON null', 'null'],
    ['a JSON string', '"__ID__"'],
    ['a JSON number', '__ID__'],
    ['no webhook_id', '{"is_enabled": false}'],
    ['webhook_id null', '{"webhook_id": null, "is_enabled": false}'],
    ['webhook_id true', '{"webhook_id": true, "is_enabled": false}'],
    ['webhook_id as an object', '{"webhook_id": {"numberText": "__ID__"}, "is_enabled": false}'],
    ['webhook_id as an array', '{"webhook_id": [__ID__], "is_enabled": false}'],
    ['webhook_id float', '{"webhook_id": __ID__.5, "is_enabled": false}'],
    ['webhook_id float with zero fraction', '{"webhook_id": __ID__.0, "is_enabled": false}'],
    ['webhook_id exponent', '{"webhook_id": __ID__e0, "is_enabled": false}'],
    ['webhook_id negative', '{"webhook_id": -__ID__, "is_enabled": false}'],
    ['webhook_id zero', '{"webhook_id": 0, "is_enabled": false}'],
    ['webhook_id 2^63', '{"webhook_id": 9223372036854775808, "is_enabled": false}'],
    ['webhook_id 2^63 as a string', '{"webhook_id": "9223372036854775808", "is_enabled": false}'],
    ['webhook_id empty string', '{"webhook_id": "", "is_enabled": false}'],
    ['webhook_id string with a sign', '{"webhook_id": "+__ID__", "is_enabled": false}'],
    ['webhook_id string with spaces', '{"webhook_id": " __ID__", "is_enabled": false}'],
    ['webhook_id string with a fraction', '{"webhook_id": "__ID__.0", "is_enabled": false}'],
    ['webhook_id hex string', '{"webhook_id": "0x1", "is_enabled": false}'],
    ['is_enabled as a string', '{"webhook_id": __ID__, "is_enabled": "false"}'],
    ['is_enabled as the string "true"', '{"webhook_id": __ID__, "is_enabled": "true"}'],
    ['is_enabled as a number', '{"webhook_id": __ID__, "is_enabled": 0}'],
    ['is_enabled null', '{"webhook_id": __ID__, "is_enabled": null}'],
    ['is_enabled as an object', '{"webhook_id": __ID__, "is_enabled": {}}'],
    ['invalid UTF-8', '{"webhook_id": __ID__, "is_enabled": false, "x": "\uFFFD"}'],
  ])('answers 400 for %s and changes nothing', async (name, template) => {
    const id = await insertWebhook('app-a', { enabled: true });
    const text = template.replaceAll(ID, id);
    // Invalid UTF-8 cannot be written in a JS string: send raw bytes with a lone continuation byte.
    const body =
      name === 'invalid UTF-8'
        ? new Uint8Array([...new TextEncoder().encode(text.slice(0, -3)), 0x80, 0x22, 0x7d])
        : text;
    const before = await snapshot();

    await expectUpdateFail(await put(body, bearer(await tokenFor('app-a'))), 400);

    expect(await snapshot()).toEqual(before);
  });

  it.each([
    [
      'arrays',
      (id: string) => `{"webhook_id": ${id}, "is_enabled": false, "x": ${'['.repeat(2600)}${']'.repeat(2600)}}`,
    ],
    [
      'objects',
      (id: string) => `{"webhook_id": ${id}, "is_enabled": false, "x": ${'{"":'.repeat(1500)}1${'}'.repeat(1500)}}`,
    ],
    [
      '33 levels',
      (id: string) => `{"webhook_id": ${id}, "is_enabled": false, "x": ${'['.repeat(32)}${']'.repeat(32)}}`,
    ],
  ])('answers 400 for a body of %s nested too deeply, and changes nothing', async (_, body) => {
    const id = await insertWebhook('app-a', { enabled: true });
    const text = body(id);
    expect(new TextEncoder().encode(text).byteLength).toBeLessThanOrEqual(MAX_BODY_BYTES);
    const before = await snapshot();

    const res = await put(text, bearer(await tokenFor('app-a')));

    await expectUpdateFail(res, 400);
    expect(res.headers.get('x-error-detail')).toBe('body nested too deeply');
    expect(await snapshot()).toEqual(before);
  });

  it('accepts a body nested 32 levels deep (unknown fields are ignored)', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const body = `{"webhook_id": ${id}, "is_enabled": false, "x": ${'['.repeat(31)}"a\\"[[{{\\\\", "]]]{{{"${']'.repeat(31)}}`;
    await expectSuccess(await put(body, bearer(await tokenFor('app-a'))));
    expect((await webhookRow(id))?.is_enabled).toBe(0);
  });

  it('answers 413 for a body over the limit, declared or streamed, and changes nothing', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const token = await tokenFor('app-a');
    const big = JSON.stringify({ webhook_id: id, is_enabled: false, pad: 'x'.repeat(MAX_BODY_BYTES) });
    const before = await snapshot();

    await expectUpdateFail(await put(big, bearer(token)), 413);
    // Streamed: no Content-Length, one byte over the limit, in small chunks.
    const bytes = new TextEncoder().encode(big).slice(0, MAX_BODY_BYTES + 1);
    let offset = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(offset, offset + 1000));
        offset += 1000;
      },
    });
    const streamed = new Request(URL_, {
      method: 'PUT',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.headers.get('content-length')).toBeNull();
    await expectUpdateFail(await fetchWith({}, streamed), 413);

    expect(await snapshot()).toEqual(before);
  });

  it('accepts a body of exactly the limit', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const head = JSON.stringify({ webhook_id: id, is_enabled: false, pad: '' });
    const body = head.replace('"pad":""', `"pad":"${'x'.repeat(MAX_BODY_BYTES - head.length)}"`);
    expect(new TextEncoder().encode(body).byteLength).toBe(MAX_BODY_BYTES);

    await expectSuccess(await put(body, bearer(await tokenFor('app-a'))));
  });

  it.each([
    ['missing', null],
    ['text/plain', 'text/plain'],
    ['form', 'application/x-www-form-urlencoded'],
    ['a JSON-like type', 'application/jsonp'],
    ['a +json type', 'application/merge-patch+json'],
  ])('answers 415 for a %s Content-Type and changes nothing', async (_, type) => {
    const id = await insertWebhook('app-a', { enabled: true });
    const headers: Record<string, string> = bearer(await tokenFor('app-a'));
    if (type !== null) headers['content-type'] = type;
    const before = await snapshot();

    const res = await SELF.fetch(URL_, {
      method: 'PUT',
      headers,
      body: new TextEncoder().encode(JSON.stringify({ webhook_id: id, is_enabled: false })),
    });

    await expectUpdateFail(res, 415);
    expect(await snapshot()).toEqual(before);
  });

  it('uses one D1 round trip for a change, a no-op, a check and a miss', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const token = await tokenFor('app-a');
    for (const body of [
      { webhook_id: id, is_enabled: false },
      { webhook_id: id, is_enabled: false },
      { webhook_id: id },
      { webhook_id: '777777', is_enabled: true },
    ]) {
      const { db, calls } = countingDb(env.DB);
      await fetchWith(
        { DB: db },
        new Request(URL_, {
          method: 'PUT',
          headers: { ...bearer(token), 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      );
      expect(calls()).toBe(1);
    }
  });

  it('touches no storage for input it rejects', async () => {
    const { db, calls } = countingDb(env.DB);
    const res = await fetchWith(
      { DB: db },
      new Request(URL_, {
        method: 'PUT',
        headers: { ...bearer(await tokenFor('app-a')), 'content-type': 'application/json' },
        body: '{"webhook_id": "nope"}',
      }),
    );
    await expectUpdateFail(res, 400);
    expect(calls()).toBe(0);
  });
});
