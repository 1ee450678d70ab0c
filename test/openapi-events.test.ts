// docs/openapi.json on publishing an event: POST /v1.0/platform/nft/event.
import { SELF } from 'cloudflare:test';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EVENT_PATH } from '../src/events/routes';
import { appState } from './helpers/app-state';
import { insertWebhook } from './helpers/database';
import { broken, expectDocumented, expectSchemaAgrees, overloaded, publishLimited } from './helpers/openapi';
import { expectValue } from './helpers/replies';
import { fetchWith, MAX_EVENT_BYTES, ORIGIN, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

const EVENT_URL = ORIGIN + EVENT_PATH;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('docs/openapi.json: publishing an event', () => {
  let publisher: string;
  /** The event each 202 answered, by its label. */
  const eventIds = new Map<string, string>();
  beforeAll(async () => {
    publisher = await tokenFor('platform-svc', { scope: 'events:publish' });
    // Two webhooks of app-s receive nft.minted: one registered through the API (its event_types),
    // one stored by hand (every type).
    const created = await fetchWith(
      {},
      new Request(URL_, {
        method: 'POST',
        headers: { ...bearer(await tokenFor('app-s')), 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'https://hooks.example.com/secret-doc', event_types: ['nft.minted'] }),
      }),
    );
    await expectValue(created, 201);
    await insertWebhook('app-s');
  });

  it('documents every reply of publishing an event: status, body schema and headers', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const eventRequest = (headers: Record<string, string>, body: string, type = 'application/json') =>
      new Request(EVENT_URL, { method: 'POST', headers: { 'content-type': type, ...headers }, body });
    const event = (fields: Record<string, unknown> = {}) =>
      JSON.stringify({ app_id: 'app-s', type: 'nft.minted', data: { token_id: '7' }, ...fields });
    /** An event body of exactly `bytes` bytes. */
    const sized = (bytes: number) => {
      const head = event({ data: { pad: '' } });
      return head.replace('"pad":""', `"pad":"${'x'.repeat(bytes - head.length)}"`);
    };
    const [unscoped, otherScopes, scopeArray, amongScopes, unreadable] = await Promise.all([
      tokenFor('platform-svc'),
      tokenFor('platform-svc', { scope: 'events:read events:publisher' }),
      tokenFor('platform-svc', { scp: ['events:publish'] }),
      tokenFor('platform-svc', { scope: 'events:read events:publish' }),
      tokenFor('platform-svc', { scope: 'events:read,events:publish' }),
    ]);
    expect(new TextEncoder().encode(sized(MAX_EVENT_BYTES)).byteLength).toBe(MAX_EVENT_BYTES);
    const publish: [string, () => Promise<Response>][] = [
      ['202', () => fetchWith({}, eventRequest(bearer(publisher), event({ id: 'doc-1' })))],
      ['202 same id', () => fetchWith({}, eventRequest(bearer(publisher), event({ id: 'doc-1', data: {} })))],
      ['202 no webhooks', () => fetchWith({}, eventRequest(bearer(publisher), event({ app_id: 'app-none' })))],
      ['202 among scopes', () => fetchWith({}, eventRequest(bearer(amongScopes as string), event()))],
      ['202 scp array', () => fetchWith({}, eventRequest(bearer(scopeArray as string), event()))],
      ['202 64 KiB', () => fetchWith({}, eventRequest(bearer(publisher), sized(MAX_EVENT_BYTES)))],
      ['400', () => fetchWith({}, eventRequest(bearer(publisher), event({ type: 'nft minted' })))],
      ['400 JSON', () => fetchWith({}, eventRequest(bearer(publisher), '{"app_id":'))],
      ['401', () => fetchWith({}, eventRequest({}, event()))],
      ['401 invalid_token', () => fetchWith({}, eventRequest(bearer('a.b.c'), event()))],
      ['401 scopes unreadable', () => fetchWith({}, eventRequest(bearer(unreadable as string), event()))],
      ['403', () => fetchWith({}, eventRequest(bearer(unscoped as string), event()))],
      ['403 other scopes', () => fetchWith({}, eventRequest(bearer(otherScopes as string), event()))],
      ['413', () => fetchWith({}, eventRequest(bearer(publisher), sized(MAX_EVENT_BYTES + 1)))],
      ['415', () => fetchWith({}, eventRequest(bearer(publisher), event(), 'text/plain'))],
      ['429', () => fetchWith(publishLimited, eventRequest(bearer(publisher), event()))],
      ['500', () => fetchWith({ DB: broken() }, eventRequest(bearer(publisher), event()))],
      ['503', () => fetchWith({ DB: overloaded() }, eventRequest(bearer(publisher), event()))],
    ];
    for (const [expected, send] of publish) {
      const res = await send();
      expect(String(res.status), `POST event ${expected}`).toBe(expected.slice(0, 3));
      if (res.status === 202) {
        const { value } = await expectValue<{ event_id: string }>(res.clone(), 202);
        eventIds.set(expected, value.event_id);
      }
      if (['202', '500', '503'].includes(expected.slice(0, 3))) {
        expect(res.headers.get('x-d1-bookmark'), `POST event ${expected}`).not.toBeNull();
      }
      if (res.status === 403) {
        expect(res.headers.get('www-authenticate')).toBe(
          'Bearer realm="nft-webhook", error="insufficient_scope", scope="events:publish"',
        );
      }
      await expectDocumented(res, 'post', EVENT_PATH);
    }
  });

  it('makes one event of the same id for the same application: one row, its deliveries made once', async () => {
    expect(eventIds.get('202 same id')).toBe(eventIds.get('202'));
    const { events, deliveries } = await appState('app-s');
    const stored = {
      events: events.filter((e) => e.source_key === 'id:doc-1').length,
      deliveries: deliveries.filter((d) => d.event_id === eventIds.get('202')).length,
    };
    // Two webhooks of app-s receive nft.minted: the registered one (its event_types) and the stored one (every type).
    expect(stored).toEqual({ events: 1, deliveries: 2 });
  });

  it('answers other methods on the event path 405', async () => {
    for (const method of ['GET', 'PUT', 'OPTIONS']) {
      const res = await SELF.fetch(`${ORIGIN}${EVENT_PATH}`, { method, headers: bearer(publisher) });
      expect(res.status, `${method} ${EVENT_PATH}`).toBe(405);
      await expectDocumented(res, 'other-method', EVENT_PATH);
    }
  });

  it("its event schema accepts and refuses the bodies the Worker's publishing does", async () => {
    const publisher = await tokenFor('platform-svc', { scope: 'events:publish' });
    const event = (fields: Record<string, unknown>, without?: string) => {
      const body: Record<string, unknown> = { app_id: 'app-events', type: 'nft.minted', data: {}, ...fields };
      if (without !== undefined) delete body[without];
      return JSON.stringify(body);
    };
    await expectSchemaAgrees('POST', EVENT_PATH, publisher, [
      event({}),
      event({ id: 'evt-1_A', data: { nested: { list: [1, 2.5, null, 'x'] } }, extra: [1] }),
      event({ app_id: 'a'.repeat(255), type: `${'A_z.9'.repeat(12)}abcd`, id: 'a'.repeat(64) }),
      event({ app_id: 'ä👍' }),
      // Characters, not UTF-16 units: 255 emoji are 510 units.
      event({ app_id: '👍'.repeat(255) }),
      event({ app_id: '👍'.repeat(256) }),
      event({}, 'app_id'),
      event({ app_id: '' }),
      event({ app_id: 'a'.repeat(256) }),
      event({ app_id: 5 }),
      event({ app_id: null }),
      event({}, 'type'),
      event({ type: '' }),
      event({ type: 'a'.repeat(65) }),
      event({ type: 'nft-minted' }),
      event({ type: 'endpoint.failing' }),
      event({ type: 'nft.minted\n' }),
      event({ type: ['nft.minted'] }),
      event({}, 'data'),
      event({ data: [] }),
      event({ data: null }),
      event({ data: 'x' }),
      event({ data: 5 }),
      event({ id: '' }),
      event({ id: 'a'.repeat(65) }),
      event({ id: 'a.b' }),
      event({ id: 5 }),
      event({ id: null }),
      '[]',
      '"event"',
      'null',
    ]);
  });
});
