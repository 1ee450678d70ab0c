// docs/openapi.json on test events: POST /v1.0/app/nft/webhook/test.
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DELIVERY_PATH, TEST_EVENT_PATH } from '../src/deliveries/routes';
import { appState } from './helpers/app-state';
import { insertWebhook } from './helpers/database';
import { deliverDue } from './helpers/objects';
import {
  broken,
  doc,
  expectEachDocumented,
  expectOtherMethodsRefused,
  expectSchemaAgrees,
  limited,
  overloaded,
  postTo,
  resolve,
  sizedBody,
  validate,
} from './helpers/openapi';
import { type Received, receiver } from './helpers/receiver';
import { expectValue, type Webhook } from './helpers/replies';
import { fetchAndWait, fetchWith, MAX_BODY_BYTES, ORIGIN, PATH } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('docs/openapi.json: sending a test event', () => {
  let token: string;
  let hook: Webhook & { secret: string };
  let off: string;
  let foreign: string;
  let id: number;
  const send = (overrides: Record<string, unknown>, headers: Record<string, string>, body: unknown, type?: string) =>
    fetchAndWait(
      overrides,
      postTo(TEST_EVENT_PATH, headers, typeof body === 'string' ? body : JSON.stringify(body), type),
    );
  /** What the two accepted requests answered (delivery_id as its exact decimal text). */
  let accepted: { event_id: string; delivery_id: string }[];
  /** What the webhook's receiver was sent. */
  let requests: Received[];
  beforeAll(async () => {
    token = await tokenFor('app-x');
    // Its event_types do not take a test event's type: a test event is delivered all the same.
    const created = await fetchWith(
      {},
      postTo(
        PATH,
        bearer(token),
        JSON.stringify({ url: 'https://hooks.example.com/test-event', event_types: ['nft.burned'] }),
      ),
    );
    ({ value: hook } = await expectValue<Webhook & { secret: string }>(created, 201));
    off = await insertWebhook('app-x', { enabled: false });
    foreign = await insertWebhook('app-y');
    id = hook.webhook_id;
  });

  it('documents every reply of sending a test event: status, body schema and headers', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    // The receiver is in place before the deliveries are stored: their endpoint's alarm may send them at once.
    ({ requests } = receiver(() => new Response(null, { status: 204 })));
    const values = await expectEachDocumented(
      'post',
      TEST_EVENT_PATH,
      [
        ['202', () => send({}, bearer(token), { webhook_id: id })],
        ['202 string id, another type', () => send({}, bearer(token), { webhook_id: String(id), type: 'nft.minted' })],
        ['400', () => send({}, bearer(token), { webhook_id: id, type: 'bad type' })],
        ['400 missing', () => send({}, bearer(token), { type: 'nft.minted' })],
        ['400 JSON', () => send({}, bearer(token), '{')],
        ['401', () => send({}, {}, { webhook_id: id })],
        ['401 invalid_token', () => send({}, bearer('a.b.c'), { webhook_id: id })],
        ['404', () => send({}, bearer(token), { webhook_id: foreign })],
        ['409', () => send({}, bearer(token), { webhook_id: off })],
        ['413', () => send({}, bearer(token), sizedBody(MAX_BODY_BYTES + 1, { webhook_id: id }))],
        ['415', () => send({}, bearer(token), { webhook_id: id }, 'text/plain')],
        ['429', () => send(limited, bearer(token), { webhook_id: id })],
        ['500', () => send({ DB: broken() }, bearer(token), { webhook_id: id })],
        ['503', () => send({ DB: overloaded() }, bearer(token), { webhook_id: id })],
      ],
      ['202', '404', '409', '500', '503'],
    );
    const replies = ['202', '202 string id, another type'].map(
      (label) => values.get(label) as { event_id: string; delivery_id: number },
    );
    expect(replies.map((v) => Object.keys(v))).toEqual([
      ['event_id', 'delivery_id'],
      ['event_id', 'delivery_id'],
    ]);
    // Sent now, while the receiver is in place (their endpoint's alarm may have sent them already).
    await deliverDue(String(id));
    // The delivery ids are int64, above 2^53: read exactly at the endpoint.
    const { deliveries } = await appState('app-x');
    accepted = replies.map((v) => ({
      event_id: v.event_id,
      delivery_id: deliveries.find((d) => d.event_id === v.event_id)?.delivery_id as string,
    }));
  });

  it('stores only the accepted ones, each its one delivery, which the log shows', async () => {
    const { events, deliveries } = await appState('app-x');
    expect(events.map((e) => e.event_id).sort()).toEqual(accepted.map((v) => v.event_id).sort());
    expect(deliveries.map((d) => [d.delivery_id, d.webhook_id]).sort()).toEqual(
      accepted.map((v) => [v.delivery_id, String(id)]).sort(),
    );
    for (const [v, type] of [
      [accepted[0], 'webhook.test'],
      [accepted[1], 'nft.minted'],
    ] as const) {
      const res = await fetchWith(
        {},
        new Request(`${ORIGIN}${DELIVERY_PATH}?delivery_id=${v?.delivery_id}`, { headers: bearer(token) }),
      );
      // A read by delivery_id asks only the objects, not D1: its reply has no X-D1-Bookmark (expectValue wants one).
      expect(res.status).toBe(200);
      expect(((await res.json()) as { value: unknown }).value).toMatchObject({ event_id: v?.event_id, type });
    }
  });

  it('delivers it as webhooks.nftEvent says: its headers, its body (data {}), signed with the webhook’s secret', async () => {
    const operation = resolve(doc.webhooks.nftEvent.post) as {
      parameters: { name: string; required?: boolean; schema: unknown }[];
      requestBody: { content: Record<string, { schema: unknown }> };
    };
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual(accepted.map((v) => v?.event_id));
    for (const request of requests) {
      expect(request.url).toBe(hook.url);
      for (const parameter of operation.parameters) {
        const header = request.headers[parameter.name.toLowerCase()];
        if (parameter.required) expect(header, parameter.name).toBeDefined();
        if (header !== undefined) expect(validate(parameter.schema, header).errors, parameter.name).toEqual([]);
      }
      const payload = JSON.parse(request.body);
      expect(validate(operation.requestBody.content['application/json']?.schema, payload).errors).toEqual([]);
      expect(payload.data).toEqual({});
      expect(() => new StandardWebhook(hook.secret).verify(request.body, request.headers)).not.toThrow();
    }
    expect(requests.map((r) => JSON.parse(r.body).type)).toEqual(['webhook.test', 'nft.minted']);
  });

  it('answers other methods 405', async () => {
    await expectOtherMethodsRefused(TEST_EVENT_PATH, '', ['GET', 'PUT', 'DELETE', 'HEAD'], token);
  });

  it("its test event schema accepts and refuses the bodies the Worker's test events do", async () => {
    const id = await insertWebhook('app-test-schema');
    const off = await insertWebhook('app-test-schema', { enabled: false, url: 'https://hooks.example.com/off' });
    await expectSchemaAgrees('POST', TEST_EVENT_PATH, await tokenFor('app-test-schema'), [
      `{"webhook_id": ${id}}`,
      `{"webhook_id": "${id}", "type": "nft.minted"}`,
      `{"webhook_id": ${id}, "type": "${'A_z.9'.repeat(12)}abcd", "extra": [1]}`,
      `{"webhook_id": ${off}}`,
      '{"webhook_id": 7}',
      `{"webhook_id": ${id}, "type": null}`,
      `{"webhook_id": ${id}, "type": ""}`,
      `{"webhook_id": ${id}, "type": "${'a'.repeat(65)}"}`,
      `{"webhook_id": ${id}, "type": "nft minted"}`,
      `{"webhook_id": ${id}, "type": "endpoint.disabled"}`,
      `{"webhook_id": ${id}, "type": "secret.rotated"}`,
      `{"webhook_id": ${id}, "type": "nft-minted"}`,
      `{"webhook_id": ${id}, "type": "nft.minted\\n"}`,
      `{"webhook_id": ${id}, "type": 5}`,
      `{"webhook_id": ${id}, "type": ["nft.minted"]}`,
      '{"webhook_id": 7.5}',
      '{"webhook_id": "0"}',
      '{"webhook_id": null}',
      '{"type": "nft.minted"}',
      '[7]',
      'null',
    ]);
  });
});
