// docs/openapi.json on the deliveries the Worker sends (webhooks.nftEvent): the request, its
// signature, and the replies it heeds.
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { deliverDue, deliveriesOfEvent, type StoredDelivery, storedDelivery } from './helpers/objects';
import { doc, type Node, resolve, validate } from './helpers/openapi';
import { receiver } from './helpers/receiver';
import { expectValue, type Webhook } from './helpers/replies';
import { EVENT_URL, fetchWith, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

type Name = 'ok' | 'gone' | 'busy' | 'other';

describe('docs/openapi.json: the deliveries the Worker sends (webhooks.nftEvent)', () => {
  let token: string;
  /** Four webhooks of app-deliver, each answering as its name says; `other` does not take the event's type. */
  let hooks: Record<Name, Webhook & { secret: string }>;
  /** The event published, and the deliveries made of it (by webhook), as their endpoints store them after sending. */
  let value: { event_id: string };
  let deliveries: Record<Name, string[]>;
  let stored: Record<string, StoredDelivery | undefined>;
  /** What the receivers were sent. */
  const sent: { url: URL; headers: Headers; method: string; body: string }[] = [];
  const operation = resolve(doc.webhooks.nftEvent.post) as {
    parameters: { name: string; in: string; required?: boolean; schema: unknown }[];
    requestBody: { content: Record<string, { schema: unknown }> };
    responses: Node;
  };
  beforeAll(async () => {
    token = await tokenFor('app-deliver');
    const publisher = await tokenFor('platform-svc', { scope: 'events:publish' });
    const register = async (name: string, eventTypes: string[] | null) => {
      const res = await fetchWith(
        {},
        new Request(URL_, {
          method: 'POST',
          headers: { ...bearer(token), 'content-type': 'application/json' },
          body: JSON.stringify({ url: `https://hooks.example.com/${name}`, event_types: eventTypes }),
        }),
      );
      return (await expectValue<Webhook & { secret: string }>(res, 201)).value;
    };
    // Each answers as its name says; `other` does not take the event's type.
    hooks = {
      ok: await register('ok', null),
      gone: await register('gone', ['nft.minted']),
      busy: await register('busy', ['nft.burned', 'nft.minted']),
      other: await register('other', ['nft.burned']),
    };
    const replies: Record<string, () => Response> = {
      '/ok': () => new Response(null, { status: 204 }),
      '/gone': () => new Response('gone', { status: 410 }),
      '/busy': () => new Response('later', { status: 503, headers: { 'retry-after': '3600' } }),
    };
    // The endpoints' objects send as soon as the event is published: the receivers are ready before.
    // Only requests to hooks.example.com are this test's (any other is another file's object, still at work).
    const { requests } = receiver((req) => {
      const url = new URL(req.url);
      return url.host === 'hooks.example.com'
        ? (replies[url.pathname] as () => Response)()
        : new Response(null, { status: 503 });
    });

    // `data` as the publisher wrote it: an integer no double holds.
    const body =
      '{"app_id":"app-deliver","type":"nft.minted","id":"deliver-1","data":{"token_id":123456789012345678901234567890}}';
    const publish = await fetchWith(
      {},
      new Request(EVENT_URL, {
        method: 'POST',
        headers: { ...bearer(publisher), 'content-type': 'application/json' },
        body,
      }),
    );
    ({ value } = await expectValue<{ event_id: string }>(publish, 202));
    const names = Object.keys(hooks) as Name[];
    await deliverDue(...names.map((name) => String(hooks[name].webhook_id)));
    deliveries = Object.fromEntries(
      await Promise.all(
        names.map(async (name) => [name, await deliveriesOfEvent(String(hooks[name].webhook_id), value.event_id)]),
      ),
    );
    stored = Object.fromEntries(
      await Promise.all(
        names.map(async (name) => [
          name,
          deliveries[name][0] === undefined
            ? undefined
            : await storedDelivery(String(hooks[name].webhook_id), deliveries[name][0]),
        ]),
      ),
    );
    for (const r of requests.filter((r) => new URL(r.url).host === 'hooks.example.com'))
      sent.push({ url: new URL(r.url), headers: new Headers(r.headers), method: r.method, body: r.body });
  });

  it('makes a delivery for each webhook that takes the event’s type', () => {
    expect(Object.fromEntries(Object.entries(deliveries).map(([name, ids]) => [name, ids.length]))).toEqual({
      ok: 1,
      gone: 1,
      busy: 1,
      other: 0,
    });
  });

  it('sends each the documented request: its headers, its body, its signature by the webhook’s secret', () => {
    const payloadSchema = operation.requestBody.content['application/json']?.schema;
    expect(sent.map((r) => r.url.pathname).sort()).toEqual(['/busy', '/gone', '/ok']);
    for (const request of sent) {
      const hook = Object.values(hooks).find((h) => new URL(h.url).pathname === request.url.pathname) as Webhook & {
        secret: string;
      };
      expect(request.method).toBe('POST');
      expect(request.headers.get('content-type')).toBe('application/json');
      for (const parameter of operation.parameters) {
        expect(parameter.in).toBe('header');
        const header = request.headers.get(parameter.name);
        if (parameter.required) expect(header, parameter.name).not.toBeNull();
        if (header !== null)
          expect(validate(parameter.schema, header).errors, `${parameter.name}: ${header}`).toEqual([]);
      }
      expect(request.headers.get('webhook-id')).toBe(value.event_id);
      expect(Math.abs(Number(request.headers.get('webhook-timestamp')) - Date.now() / 1000)).toBeLessThan(60);
      const payload = JSON.parse(request.body);
      expect(validate(payloadSchema, payload).errors).toEqual([]);
      expect(payload.type).toBe('nft.minted');
      expect(request.body).toContain('{"token_id":123456789012345678901234567890}');
      const headers = Object.fromEntries(request.headers);
      expect(() => new StandardWebhook(hook.secret).verify(request.body, headers)).not.toThrow();
      const others = Object.values(hooks).filter((h) => h !== hook);
      for (const other of others)
        expect(() => new StandardWebhook(other.secret).verify(request.body, headers)).toThrow();
    }
  });

  it('heeds the replies as documented: 2XX delivered, 410 disables, 503 with Retry-After waits that long', async () => {
    expect(Object.keys(operation.responses)).toEqual(
      expect.arrayContaining(['2XX', '410', '429', '502', '503', '504']),
    );
    // 2XX: delivered. 410: the delivery ends (the webhook is disabled below). 503 with Retry-After:
    // the next attempt that long after this one.
    expect(stored.ok).toMatchObject({ status: 'succeeded', attempts: 1, last_status: 204, next_attempt_at: null });
    expect(stored.gone).toMatchObject({ status: 'failed', attempts: 1, last_status: 410, next_attempt_at: null });
    expect(stored.busy).toMatchObject({ status: 'pending', attempts: 1, last_status: 503 });
    expect(Date.parse(stored.busy!.next_attempt_at!) - Date.parse(stored.busy!.last_attempt_at!)).toBe(3_600_000);
    expect(stored.other).toBeUndefined();
    const enabled: Record<string, boolean> = {};
    for (const [name, hook] of Object.entries(hooks)) {
      const res = await fetchWith({}, new Request(`${URL_}?webhook_id=${hook.webhook_id}`, { headers: bearer(token) }));
      enabled[name] = (await expectValue<Webhook>(res)).value.is_enabled;
    }
    expect(enabled).toEqual({ ok: true, gone: false, busy: true, other: true });
  });
});
