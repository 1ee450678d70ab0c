// docs/openapi.json on the deliveries the Worker sends (webhooks.nftEvent): the request, its
// signature, and the replies it heeds.
import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { consumeDeliveries } from '../src/deliveries/consumer';
import { doc, type Node, resolve, validate } from './helpers/openapi';
import { expectValue, type Webhook } from './helpers/replies';
import { EVENT_URL, fetchWith, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('docs/openapi.json: the deliveries the Worker sends (webhooks.nftEvent)', () => {
  let token: string;
  /** Four webhooks of app-deliver, each answering as its name says; `other` does not take the event's type. */
  let hooks: Record<'ok' | 'gone' | 'busy' | 'other', Webhook & { secret: string }>;
  /** The event published, and the deliveries made of it. */
  let value: { event_id: string };
  let deliveries: { id: string; webhook: string }[];
  /** What the receivers were sent, what the consumer did with each message, and the delays of its retries. */
  const sent: { url: URL; headers: Headers; method: string; body: string }[] = [];
  let result: Awaited<ReturnType<typeof getQueueResult>>;
  let retried: unknown[][];
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
    ({ results: deliveries } = await env.DB.prepare(
      `SELECT CAST(delivery_id AS TEXT) AS id, CAST(webhook_id AS TEXT) AS webhook FROM deliveries
       WHERE event_id = ?1 ORDER BY delivery_id`,
    )
      .bind(value.event_id)
      .all<{ id: string; webhook: string }>());
    const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      sent.push({ url, headers: request.headers, method: request.method, body: await request.text() });
      return (replies[url.pathname] as () => Response)();
    }) as typeof fetch;
    const batch = createMessageBatch(
      'nft-webhook-deliveries',
      deliveries.map((d) => ({
        id: `msg-${d.webhook}`,
        timestamp: new Date(),
        attempts: 1,
        body: { delivery_id: d.id },
      })),
    );
    // The pool's batch records which messages were retried, not their delays: spies see those.
    const retries = batch.messages.map((message) => vi.spyOn(message, 'retry'));
    const ctx = createExecutionContext();
    await consumeDeliveries(batch, env, fetcher);
    result = await getQueueResult(batch, ctx);
    retried = retries.map((spy) => [...spy.mock.calls]);
  });

  it('makes a delivery for each webhook that takes the event’s type', () => {
    expect(deliveries.map((d) => d.webhook)).toEqual(
      [hooks.ok, hooks.gone, hooks.busy].map((h) => String(h.webhook_id)),
    );
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
    expect(result.explicitAcks.sort()).toEqual([`msg-${hooks.gone.webhook_id}`, `msg-${hooks.ok.webhook_id}`].sort());
    expect(result.retryMessages).toEqual([{ msgId: `msg-${hooks.busy.webhook_id}` }]);
    expect(retried).toEqual([[], [], [[{ delaySeconds: 3600 }]]]);
    const enabled: Record<string, boolean> = {};
    for (const [name, hook] of Object.entries(hooks)) {
      const res = await fetchWith({}, new Request(`${URL_}?webhook_id=${hook.webhook_id}`, { headers: bearer(token) }));
      enabled[name] = (await expectValue<Webhook>(res)).value.is_enabled;
    }
    expect(enabled).toEqual({ ok: true, gone: false, busy: true, other: true });
  });
});
