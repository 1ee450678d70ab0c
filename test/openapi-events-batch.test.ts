// docs/openapi.json on publishing a batch of events: POST /v1.0/platform/nft/events.
import { SELF } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_BATCH_BYTES } from '../src/events/publish-batch';
import { EVENTS_PATH } from '../src/events/routes';
import { insertWebhook } from './helpers/database';
import { broken, expectDocumented, overloaded, postTo, publishLimited } from './helpers/openapi';
import { expectValue } from './helpers/replies';
import { fetchWith, ORIGIN } from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** An APPLICATIONS binding whose objects fail every call. */
const failingApplications = {
  getByName: () => ({
    publish: async () => {
      throw new Error('object unavailable');
    },
  }),
};

describe('docs/openapi.json: publishing a batch of events', () => {
  it('documents every reply of publishing a batch: status, body schema and headers', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    await insertWebhook(app);
    const publisher = bearer(await platformToken());
    const event = (id: string, fields: Record<string, unknown> = {}) => ({
      app_id: app,
      type: 'NEW_NFT',
      id,
      data: { token_id: id },
      ...fields,
    });
    const batch = (events: unknown[]) => JSON.stringify({ events });
    const send = (headers: Record<string, string>, body: string, bindings = {}, type?: string) =>
      fetchWith(bindings, postTo(EVENTS_PATH, headers, body, type));
    const cases: [string, () => Promise<Response>][] = [
      ['202', () => send(publisher, batch([event('b1'), event('b2'), event('b1')]))],
      ['202 again', () => send(publisher, batch([event('b1'), event('b2')]))],
      ['400 no id', () => send(publisher, batch([event('b3'), { app_id: app, type: 'NEW_NFT', data: {} }]))],
      ['400 empty', () => send(publisher, batch([]))],
      ['400 JSON', () => send(publisher, '{"events":')],
      ['401', () => send({}, batch([event('b4')]))],
      ['403', async () => send(bearer(await tokenFor(app)), batch([event('b4')]))],
      ['413', () => send(publisher, `{"events":[],"pad":"${'x'.repeat(MAX_BATCH_BYTES)}"}`)],
      ['415', () => send(publisher, batch([event('b4')]), {}, 'text/plain')],
      ['429', () => send(publisher, batch([event('b4')]), publishLimited)],
      ['503', () => send(publisher, batch([event('b4')]), { DB: overloaded() })],
      ['503 broken', () => send(publisher, batch([event('b4')]), { DB: broken() })],
      ['503 object', () => send(publisher, batch([event('b4')]), { APPLICATIONS: failingApplications })],
    ];
    const ids = new Map<string, string[]>();
    for (const [expected, run] of cases) {
      const res = await run();
      expect(String(res.status), `POST events ${expected}`).toBe(expected.slice(0, 3));
      if (res.status === 202)
        ids.set(expected, (await expectValue<{ event_ids: string[] }>(res.clone(), 202)).value.event_ids);
      if (res.status === 400) expect(res.headers.get('x-error-detail')).toMatch(/^events|^body/);
      if (res.status === 503) expect(res.headers.get('retry-after')).toBe('2');
      await expectDocumented(res, 'post', EVENTS_PATH);
    }
    const [b1, b2, again] = [ids.get('202')?.[0], ids.get('202')?.[1], ids.get('202 again')];
    expect(ids.get('202')?.[2]).toBe(b1);
    expect(again).toEqual([b1, b2]);
  });

  it('answers other methods on the events path 405 with Allow: POST', async () => {
    for (const method of ['GET', 'PUT', 'OPTIONS']) {
      const res = await SELF.fetch(`${ORIGIN}${EVENTS_PATH}`, { method, headers: bearer(await platformToken()) });
      expect(res.status, `${method} ${EVENTS_PATH}`).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      await expectDocumented(res, 'other-method', EVENTS_PATH);
    }
  });
});
