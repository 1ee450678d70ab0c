// What every destination type shares with HTTP (docs/destinations.md: "everything else is the
// same"): test events, resends and recoveries reach the API destinations in each one's request
// format; FIFO orders SQS and Pub/Sub messages; the delivery log keeps each API's status and reply
// and never a credential or token; an HTTP webhook's custom headers go with every kind of
// delivery; an application's erasure leaves no sealed credential in D1.
import { env } from 'cloudflare:test';
import { decodeJwt } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MASKED } from '../src/core/custom-headers';
import { KEPT_BODY_BYTES } from '../src/deliveries/attempt';
import { adminHeaders, applicationRow, appQuery, callApplication } from './helpers/applications';
import {
  ACCOUNT,
  apis,
  at,
  attributes,
  CF_TOKEN,
  destinations,
  expectSigV4,
  GOOGLE_TOKEN,
  KEY_ID,
  QUEUE,
  SA_KEY,
  SECRET_KEY,
  verifier,
} from './helpers/destinations';
import { deliverDue, deliveriesOfEvent, endpointSql, makeDue, storedAttempts, storedDelivery } from './helpers/objects';
import type { Received } from './helpers/receiver';
import { expectEnvelope, expectValue } from './helpers/replies';
import { fetchAndWait, post, postJson, publishEvent, readLog, stoppedAfterEachTest, URL_ } from './helpers/requests';
import { minutesAgo } from './helpers/time';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});
// The alarms stop before the APIs' stand-in does (after-each hooks run last first).
const { register } = stoppedAfterEachTest();

const SQS_HOST = 'sqs.eu-west-1.amazonaws.com';
const EVENTS_HOST = 'events.us-east-1.amazonaws.com';
const PUBSUB_HOST = 'pubsub.googleapis.com';
const QUEUE_HOST = 'api.cloudflare.com';

/** The body every delivery carries, as a receiver parses it. */
interface Payload {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** One message as it reached its API: its `webhook-id`, its payload, and what carried them. */
interface Arrived {
  messageId: string;
  payload: Payload;
  /** The exact body an HTTP endpoint would get (SQS, Pub/Sub), or the payload with message_id (the others). */
  text: string;
  request: Record<string, unknown>;
}

/**
 * SendMessage requests to `queueUrl`, oldest first, each as the SQS API takes it (AWS JSON 1.0,
 * SigV4 for sqs in the queue's region), its body and signature attributes verified with the
 * webhook's secret.
 */
async function sqsMessages(requests: Received[], queueUrl: string, secret: string): Promise<Arrived[]> {
  const arrived: Arrived[] = [];
  for (const req of at(requests, SQS_HOST)) {
    const request = JSON.parse(req.body);
    if (request.QueueUrl !== queueUrl) continue;
    expect(req.method).toBe('POST');
    expect(req.url).toBe(`https://${SQS_HOST}/`);
    expect(req.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(req.headers['x-amz-target']).toBe('AmazonSQS.SendMessage');
    await expectSigV4(req, 'sqs', 'eu-west-1');
    const attrs = attributes(request.MessageAttributes);
    expect(Object.keys(attrs).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    const payload = verifier(secret).verify(request.MessageBody, attrs) as Payload;
    arrived.push({ messageId: attrs['webhook-id'] as string, payload, text: request.MessageBody, request });
  }
  return arrived;
}

/** topics.publish requests to `topic`, oldest first, with the token granted, each message verified. */
function pubSubMessages(requests: Received[], topic: string, secret: string): Arrived[] {
  const arrived: Arrived[] = [];
  for (const req of at(requests, PUBSUB_HOST)) {
    if (req.url !== `https://${PUBSUB_HOST}/v1/${topic}:publish`) continue;
    expect(req.method).toBe('POST');
    expect(req.headers.authorization).toBe(`Bearer ${GOOGLE_TOKEN}`);
    const { messages } = JSON.parse(req.body);
    expect(messages).toHaveLength(1);
    const [message] = messages;
    const text = new TextDecoder().decode(Uint8Array.from(atob(message.data), (c) => c.charCodeAt(0)));
    const payload = verifier(secret).verify(text, message.attributes) as Payload;
    arrived.push({ messageId: message.attributes['webhook-id'], payload, text, request: message });
  }
  return arrived;
}

/** PutEvents requests to `bus`, oldest first: one entry each, the payload and its message_id as Detail. */
async function eventBridgeEntries(requests: Received[], bus: string): Promise<Arrived[]> {
  const arrived: Arrived[] = [];
  for (const req of at(requests, EVENTS_HOST)) {
    const { Entries } = JSON.parse(req.body);
    expect(Entries).toHaveLength(1);
    const [entry] = Entries;
    if (entry.EventBusName !== bus) continue;
    expect(req.url).toBe(`https://${EVENTS_HOST}/`);
    expect(req.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(req.headers['x-amz-target']).toBe('AWSEvents.PutEvents');
    await expectSigV4(req, 'events', 'us-east-1');
    expect(Object.keys(entry).sort()).toEqual(['Detail', 'DetailType', 'EventBusName', 'Source']);
    const { message_id, ...payload } = JSON.parse(entry.Detail);
    expect(entry).toMatchObject({ Source: 'com.example.nft', DetailType: payload.type });
    arrived.push({ messageId: message_id, payload, text: entry.Detail, request: entry });
  }
  return arrived;
}

/** Messages pushed to the Cloudflare Queue, oldest first, with the API token as bearer. */
function queueMessages(requests: Received[]): Arrived[] {
  return at(requests, QUEUE_HOST).map((req) => {
    expect(req.url).toBe(`https://${QUEUE_HOST}/client/v4/accounts/${ACCOUNT}/queues/${QUEUE}/messages`);
    expect(req.headers.authorization).toBe(`Bearer ${CF_TOKEN}`);
    const request = JSON.parse(req.body);
    expect(Object.keys(request).sort()).toEqual(['body', 'content_type']);
    expect(request.content_type).toBe('json');
    const { message_id, ...payload } = request.body;
    return { messageId: message_id, payload, text: JSON.stringify(request.body), request };
  });
}

interface Attempt {
  attempt: number;
  status: number | null;
  error: string | null;
  body: string | null;
}
interface Delivery {
  delivery_id: number;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  payload: string;
  attempt_log: Attempt[];
}

/** GET of the delivery log by delivery_id (answered by the objects alone: no bookmark): its text and value. */
async function logOf(app: string, deliveryId: string | number) {
  const res = await readLog(`delivery_id=${deliveryId}`, bearer(await tokenFor(app)));
  return expectValue<Delivery>(res, 200, { usedD1: false });
}

/** Makes these deliveries failed (their schedule spent), created `minutes` ago, as a recovery finds them. */
async function failed(webhookId: string, deliveryIds: string[], minutes: number) {
  // Whatever pass of its alarm is under way ends first.
  await deliverDue(webhookId);
  await endpointSql(
    webhookId,
    `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL, created_at = ?2
     WHERE delivery_id IN (SELECT CAST(value AS INTEGER) FROM json_each(?1))`,
    JSON.stringify(deliveryIds),
    minutesAgo(minutes),
  );
}

describe('test events, resends and recoveries to API destinations', () => {
  it('sends a test event to SQS, Pub/Sub, EventBridge and a Cloudflare Queue, each in its request format', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    const sqs = await register(app, { destination: kinds.aws_sqs });
    const pubsub = await register(app, { destination: kinds.gcp_pubsub });
    const bus = await register(app, { destination: kinds.aws_eventbridge });
    const queue = await register(app, { destination: kinds.cloudflare_queue });
    const { requests } = apis(app);
    const token = bearer(await tokenFor(app));
    const sent = new Map<string, { event_id: string; delivery_id: number }>();
    for (const hook of [sqs, pubsub, bus, queue]) {
      const { res } = await postJson('test', { webhook_id: Number(hook.id) }, token);
      const { value } = await expectValue<{ event_id: string; delivery_id: number }>(res, 202);
      expect(Object.keys(value)).toEqual(['event_id', 'delivery_id']);
      expect(await deliveriesOfEvent(hook.id, value.event_id)).toEqual([String(value.delivery_id)]);
      sent.set(hook.id, value);
    }
    await deliverDue(sqs.id, pubsub.id, bus.id, queue.id);

    const test = { type: 'webhook.test', timestamp: expect.any(String), data: {} };
    const arrived = new Map([
      [sqs.id, await sqsMessages(requests, kinds.aws_sqs.queue_url, sqs.secret)],
      [pubsub.id, pubSubMessages(requests, kinds.gcp_pubsub.topic, pubsub.secret)],
      [bus.id, await eventBridgeEntries(requests, app)],
      [queue.id, queueMessages(requests)],
    ]);
    for (const [id, messages] of arrived) {
      const { event_id, delivery_id } = sent.get(id)!;
      expect(messages.map((m) => [m.messageId, m.payload])).toEqual([[event_id, test]]);
      // Recorded as any delivery: succeeded, one attempt with the API's status and reply.
      expect(await storedDelivery(id, String(delivery_id))).toMatchObject({ status: 'succeeded', attempts: 1 });
      const { value } = await logOf(app, delivery_id);
      expect(value).toMatchObject({ delivery_id, event_id, type: 'webhook.test', status: 'succeeded' });
      expect(value.attempt_log).toMatchObject([{ attempt: 1, status: 200, error: null }]);
    }
    // Each API's own reply, kept.
    expect((await logOf(app, sent.get(sqs.id)!.delivery_id)).value.attempt_log[0]!.body).toContain('"MessageId"');
    expect((await logOf(app, sent.get(pubsub.id)!.delivery_id)).value.attempt_log[0]!.body).toBe(
      '{"messageIds":["1"]}',
    );
    expect((await logOf(app, sent.get(bus.id)!.delivery_id)).value.attempt_log[0]!.body).toContain(
      '"FailedEntryCount":0',
    );
    expect((await logOf(app, sent.get(queue.id)!.delivery_id)).value.attempt_log[0]!.body).toContain('"success":true');
  });

  it('resends a delivery to SQS, Pub/Sub and EventBridge: the same message again, with the original webhook-id', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    const sqs = await register(app, { destination: kinds.aws_sqs });
    const pubsub = await register(app, { destination: kinds.gcp_pubsub });
    const bus = await register(app, { destination: kinds.aws_eventbridge });
    const { requests } = apis(app);
    const { eventId } = await publishEvent(app, 'NEW_NFT', { token_id: '7', owner: '0xabc' });
    await deliverDue(sqs.id, pubsub.id, bus.id);
    const token = bearer(await tokenFor(app));
    const resent = new Map<string, { original: string; copy: string }>();
    for (const hook of [sqs, pubsub, bus]) {
      const [original] = (await deliveriesOfEvent(hook.id, eventId)) as [string];
      expect(await storedDelivery(hook.id, original)).toMatchObject({ status: 'succeeded', attempts: 1 });
      const { res } = await postJson('delivery/resend', { delivery_id: Number(original) }, token);
      const { value } = await expectValue<{ delivery_id: number }>(res, 202);
      expect(Object.keys(value)).toEqual(['delivery_id']);
      expect(String(value.delivery_id)).not.toBe(original);
      resent.set(hook.id, { original, copy: String(value.delivery_id) });
    }
    await deliverDue(sqs.id, pubsub.id, bus.id);

    const data = { token_id: '7', owner: '0xabc' };
    const arrived = new Map([
      [sqs.id, await sqsMessages(requests, kinds.aws_sqs.queue_url, sqs.secret)],
      [pubsub.id, pubSubMessages(requests, kinds.gcp_pubsub.topic, pubsub.secret)],
      [bus.id, await eventBridgeEntries(requests, app)],
    ]);
    for (const [id, messages] of arrived) {
      // Twice, the same webhook-id and the same bytes (SQS and Pub/Sub: the signed body; EventBridge: the Detail).
      expect(messages.map((m) => m.messageId)).toEqual([eventId, eventId]);
      expect(messages.map((m) => m.payload)).toEqual([
        { type: 'NEW_NFT', timestamp: expect.any(String), data },
        { type: 'NEW_NFT', timestamp: expect.any(String), data },
      ]);
      expect(messages[1]!.text).toBe(messages[0]!.text);
      const { original, copy } = resent.get(id)!;
      // The original is left as it was; the copy is a delivery of its own with the original's event_id.
      expect(await storedDelivery(id, original)).toMatchObject({ status: 'succeeded', attempts: 1 });
      expect(await storedDelivery(id, copy)).toMatchObject({ status: 'succeeded', attempts: 1, message_id: eventId });
      const { value } = await logOf(app, copy);
      expect(value).toMatchObject({ delivery_id: Number(copy), event_id: eventId, status: 'succeeded' });
      expect(value.attempt_log).toMatchObject([{ attempt: 1, status: 200, error: null }]);
    }
  });

  it('recovers failed deliveries to SQS, Pub/Sub and a Cloudflare Queue: each reaches its API again', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    const sqs = await register(app, { destination: kinds.aws_sqs });
    const pubsub = await register(app, { destination: kinds.gcp_pubsub });
    const queue = await register(app, { destination: kinds.cloudflare_queue });
    // Every API unavailable until the recovery.
    let down = true;
    const { requests } = apis(app, (req) =>
      down && new URL(req.url).host !== 'oauth2.googleapis.com'
        ? Response.json({ message: 'Service Unavailable' }, { status: 503 })
        : undefined,
    );
    const { eventId } = await publishEvent(app, 'NEW_NFT', { token_id: '9' });
    await deliverDue(sqs.id, pubsub.id, queue.id);
    const originals = new Map<string, string>();
    for (const hook of [sqs, pubsub, queue]) {
      const [id] = (await deliveriesOfEvent(hook.id, eventId)) as [string];
      expect(await storedAttempts(hook.id, id)).toMatchObject([{ attempt: 1, status: 503, error: null }]);
      await failed(hook.id, [id], 10);
      originals.set(hook.id, id);
    }
    down = false;
    const token = bearer(await tokenFor(app));
    for (const hook of [sqs, pubsub, queue]) {
      const { res } = await postJson('recover', { webhook_id: Number(hook.id), since: minutesAgo(30) }, token);
      const { value } = await expectValue<{ deliveries: number }>(res, 202);
      expect(value).toEqual({ deliveries: 1 });
    }
    await deliverDue(sqs.id, pubsub.id, queue.id);

    const data = { token_id: '9' };
    const arrived = new Map([
      [sqs.id, await sqsMessages(requests, kinds.aws_sqs.queue_url, sqs.secret)],
      [pubsub.id, pubSubMessages(requests, kinds.gcp_pubsub.topic, pubsub.secret)],
      [queue.id, queueMessages(requests)],
    ]);
    for (const [id, messages] of arrived) {
      // Refused once, then sent again by the recovery: the same message both times.
      expect(messages.map((m) => m.messageId)).toEqual([eventId, eventId]);
      expect(messages.map((m) => m.payload.data)).toEqual([data, data]);
      const delivery = originals.get(id)!;
      expect(await storedDelivery(id, delivery)).toMatchObject({
        status: 'succeeded',
        attempts: 2,
        message_id: eventId,
      });
      const { value } = await logOf(app, delivery);
      expect(value).toMatchObject({ event_id: eventId, status: 'succeeded', attempts: 2 });
      expect(value.attempt_log).toMatchObject([
        { attempt: 1, status: 503, error: null, body: '{"message":"Service Unavailable"}' },
        { attempt: 2, status: 200, error: null },
      ]);
    }
  });
});

describe('FIFO to API destinations', () => {
  it('sends a FIFO webhook’s SQS messages in order, grouped by the webhook, deduplicated by webhook-id; Pub/Sub’s with the ordering key', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    const fifoUrl = `${kinds.aws_sqs.queue_url}.fifo`;
    const sqs = await register(app, { destination: { ...kinds.aws_sqs, queue_url: fifoUrl }, ordering: 'fifo' });
    const pubsub = await register(app, { destination: kinds.gcp_pubsub, ordering: 'fifo' });
    // The queue throttles the first message once: the ones behind it wait for it.
    let throttled = false;
    const { requests } = apis(app, (req) => {
      if (new URL(req.url).host !== SQS_HOST || throttled) return undefined;
      throttled = true;
      return Response.json(
        { __type: 'com.amazonaws.sqs#ThrottlingException', message: 'Rate exceeded' },
        { status: 400, headers: { 'x-amzn-query-error': 'ThrottlingException;Sender' } },
      );
    });
    const events = [];
    for (const n of [1, 2, 3]) events.push((await publishEvent(app, 'NEW_NFT', { n })).eventId);
    await deliverDue(sqs.id, pubsub.id);
    expect((await sqsMessages(requests, fifoUrl, sqs.secret)).map((m) => m.payload.data.n)).toEqual([1]);
    const [head] = (await deliveriesOfEvent(sqs.id, events[0] as string)) as [string];
    expect(await storedDelivery(sqs.id, head)).toMatchObject({ status: 'pending', attempts: 1 });
    const behind = (await deliveriesOfEvent(sqs.id, events[1] as string))[0] as string;
    expect(await storedDelivery(sqs.id, behind)).toMatchObject({ status: 'pending', attempts: 0 });

    // Its retry, when due, then the others, one at a time.
    await makeDue(sqs.id, head);
    await deliverDue(sqs.id);
    const sent = await sqsMessages(requests, fifoUrl, sqs.secret);
    expect(sent.map((m) => m.payload.data.n)).toEqual([1, 1, 2, 3]);
    expect(sent.map((m) => m.messageId)).toEqual([events[0], ...events]);
    for (const m of sent) {
      expect(Object.keys(m.request).sort()).toEqual([
        'MessageAttributes',
        'MessageBody',
        'MessageDeduplicationId',
        'MessageGroupId',
        'QueueUrl',
      ]);
      expect(m.request.MessageGroupId).toBe(sqs.id);
      expect(m.request.MessageDeduplicationId).toBe(m.messageId);
    }
    for (const eventId of events) {
      const [id] = (await deliveriesOfEvent(sqs.id, eventId)) as [string];
      expect((await storedDelivery(sqs.id, id))?.status).toBe('succeeded');
    }

    const published = pubSubMessages(requests, kinds.gcp_pubsub.topic, pubsub.secret);
    expect(published.map((m) => [m.payload.data.n, m.messageId])).toEqual([
      [1, events[0]],
      [2, events[1]],
      [3, events[2]],
    ]);
    for (const m of published) {
      expect(Object.keys(m.request).sort()).toEqual(['attributes', 'data', 'orderingKey']);
      expect(m.request.orderingKey).toBe(pubsub.id);
    }
  });
});

describe('the delivery log of API destinations', () => {
  /** Every credential and token an attempt may use, in clear: none may ever be in the log. */
  const SECRETS = [
    SECRET_KEY,
    CF_TOKEN,
    GOOGLE_TOKEN,
    SA_KEY.private_key,
    // Any line of the private key's PEM on its own.
    ...SA_KEY.private_key.split('\n').filter((line) => line.length > 16 && !line.startsWith('-----')),
  ];

  /** The log as the API answers it (each delivery by its id, and the webhook's page) and as the object stores it. */
  async function everythingLogged(app: string, hooks: { id: string }[], eventIds: string[]) {
    const texts: string[] = [];
    for (const hook of hooks) {
      const page = await readLog(`webhook_id=${hook.id}`, bearer(await tokenFor(app)));
      texts.push((await expectValue(page)).text);
      for (const eventId of eventIds) {
        for (const id of await deliveriesOfEvent(hook.id, eventId)) {
          texts.push((await logOf(app, id)).text);
          texts.push(JSON.stringify(await storedAttempts(hook.id, id)));
        }
      }
      texts.push(JSON.stringify(await endpointSql(hook.id, 'SELECT * FROM delivery_attempts')));
    }
    return texts.join('\n');
  }

  it('keeps each API’s status and reply for every attempt, refused or taken, and never a credential or token', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    const sqs = await register(app, { destination: kinds.aws_sqs });
    const bus = await register(app, { destination: kinds.aws_eventbridge });
    const queue = await register(app, { destination: kinds.cloudflare_queue });
    const pubsub = await register(app, { destination: kinds.gcp_pubsub });
    // Each API refuses the first attempt as it refuses one, then takes the next.
    const refused = new Set<string>();
    const { requests } = apis(app, (req) => {
      const host = new URL(req.url).host;
      if (host === 'oauth2.googleapis.com' || refused.has(host)) return undefined;
      refused.add(host);
      switch (host) {
        case SQS_HOST:
          return Response.json(
            { __type: 'com.amazon.coral.service#AccessDeniedException', message: 'not authorized to SendMessage' },
            { status: 403 },
          );
        case EVENTS_HOST:
          return Response.json({
            Entries: [{ ErrorCode: 'InternalFailure', ErrorMessage: 'try again' }],
            FailedEntryCount: 1,
          });
        case QUEUE_HOST:
          return Response.json(
            { success: false, errors: [{ code: 10000, message: 'Authentication error' }], messages: [] },
            { status: 401 },
          );
        default:
          return Response.json(
            {
              error: {
                code: 401,
                message: 'Request had invalid authentication credentials.',
                status: 'UNAUTHENTICATED',
              },
            },
            { status: 401 },
          );
      }
    });
    const { eventId } = await publishEvent(app);
    const hooks = [sqs, bus, queue, pubsub];
    await deliverDue(...hooks.map((h) => h.id));
    for (const hook of hooks) {
      const [id] = (await deliveriesOfEvent(hook.id, eventId)) as [string];
      await makeDue(hook.id, id);
    }
    await deliverDue(...hooks.map((h) => h.id));
    // Each API was asked twice (Pub/Sub's token, refused, asked for again).
    for (const host of [SQS_HOST, EVENTS_HOST, QUEUE_HOST, PUBSUB_HOST]) expect(at(requests, host)).toHaveLength(2);

    const expected: [{ id: string }, Partial<Attempt>, string, string][] = [
      [sqs, { status: 403, error: null }, 'AccessDeniedException', '"MessageId"'],
      [bus, { status: 200, error: 'rejected' }, '"ErrorCode":"InternalFailure"', '"FailedEntryCount":0'],
      [queue, { status: 401, error: null }, 'Authentication error', '"success":true'],
      [pubsub, { status: 401, error: null }, 'UNAUTHENTICATED', '"messageIds"'],
    ];
    for (const [hook, first, refusal, taken] of expected) {
      const [id] = (await deliveriesOfEvent(hook.id, eventId)) as [string];
      const { value } = await logOf(app, id);
      expect(value).toMatchObject({ event_id: eventId, status: 'succeeded', attempts: 2 });
      expect(value.attempt_log).toMatchObject([
        { attempt: 1, ...first },
        { attempt: 2, status: 200, error: null },
      ]);
      expect(value.attempt_log[0]!.body).toContain(refusal);
      expect(value.attempt_log[1]!.body).toContain(taken);
      // The object's own rows say the same.
      expect((await storedAttempts(hook.id, id)).map((a) => [a.status, a.error, a.body])).toEqual(
        value.attempt_log.map((a) => [a.status, a.error, a.body]),
      );
    }
    const logged = await everythingLogged(app, hooks, [eventId]);
    for (const secret of SECRETS) expect(logged).not.toContain(secret);
  });

  it('keeps no token even when an API’s reply echoes the request it got, cut at 1 KiB or not', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    const queue = await register(app, { destination: kinds.cloudflare_queue });
    const pubsub = await register(app, { destination: kinds.gcp_pubsub });
    const sqs = await register(app, { destination: kinds.aws_sqs });
    // A key whose token grant is refused, by a token endpoint that quotes the grant's assertion.
    const ungranted = 'ungranted@project-one.iam.gserviceaccount.com';
    const refused = await register(app, {
      destination: {
        ...kinds.gcp_pubsub,
        topic: `${kinds.gcp_pubsub.topic}-2`,
        service_account_key: { ...SA_KEY, client_email: ungranted },
      },
    });
    const assertionOf = (req: Received) => new URLSearchParams(req.body).get('assertion') as string;
    // A gateway in front of each API that answers with what it received (its headers first), as a
    // debugging proxy or the operator's stand-in may: the first time whole, the second time with
    // the bearer token astride the kept 1 KiB.
    const echoed = new Set<string>();
    const { requests } = apis(app, (req) => {
      const host = new URL(req.url).host;
      if (host === 'oauth2.googleapis.com')
        return decodeJwt(assertionOf(req)).iss === ungranted
          ? Response.json({ error: 'invalid_grant', received: req.body }, { status: 400 })
          : undefined;
      const echo = JSON.stringify({ received: req.headers, body: req.body });
      const before = echo.indexOf('Bearer ') + 'Bearer '.length;
      const padding = echoed.has(host) ? 'x'.repeat(KEPT_BODY_BYTES - before - 8) : '';
      echoed.add(host);
      return new Response(`${padding}${echo}`, { status: 502 });
    });
    const { eventId } = await publishEvent(app);
    const hooks = [queue, pubsub, sqs, refused];
    await deliverDue(...hooks.map((h) => h.id));
    for (const hook of hooks) {
      const [id] = (await deliveriesOfEvent(hook.id, eventId)) as [string];
      await makeDue(hook.id, id);
    }
    await deliverDue(...hooks.map((h) => h.id));
    for (const host of [QUEUE_HOST, PUBSUB_HOST, SQS_HOST]) expect(at(requests, host)).toHaveLength(2);
    const grants = at(requests, 'oauth2.googleapis.com').map(assertionOf);
    const quoted = grants.filter((a) => decodeJwt(a).iss === ungranted);
    expect(quoted).toHaveLength(2);
    const [id] = (await deliveriesOfEvent(refused.id, eventId)) as [string];
    const { value: grantLog } = await logOf(app, id);
    expect(grantLog.attempt_log).toMatchObject([
      {
        attempt: 1,
        status: 400,
        error: null,
        body: `{"error":"invalid_grant","received":"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=${MASKED}"}`,
      },
      { attempt: 2, status: 400, error: null },
    ]);
    for (const hook of hooks.slice(0, 3)) {
      const [id] = (await deliveriesOfEvent(hook.id, eventId)) as [string];
      const { value } = await logOf(app, id);
      expect(value.attempt_log).toMatchObject([
        { attempt: 1, status: 502, error: null },
        { attempt: 2, status: 502, error: null },
      ]);
      // The reply is kept (its other headers, the message), but not a token.
      expect(value.attempt_log[0]!.body).toContain('"received":{');
      expect(value.attempt_log[0]!.body).toContain('"authorization":"');
    }
    const logged = await everythingLogged(app, hooks, [eventId]);
    for (const secret of [...SECRETS, ...quoted]) expect(logged).not.toContain(secret);
    // Not even the part of a token that the kept 1 KiB would have cut.
    for (const token of [CF_TOKEN, GOOGLE_TOKEN]) expect(logged).not.toContain(token.slice(0, 6));
    // Where it was, the mask sensitive headers are shown with.
    expect(logged).toContain(`Bearer ${MASKED}`);
  });
});

describe('an HTTP webhook’s custom headers', () => {
  it('are sent, the sensitive one opened, with an attempt, a test event, a resend and a recovery; never logged', async () => {
    const app = freshApp();
    const hook = await register(app, {
      headers: { 'X-Tenant': 'acme', Authorization: 'Bearer gateway-secret' },
      sensitive_headers: ['Authorization'],
    });
    // The receiver fails until the recovery, and answers with the headers it got.
    let down = true;
    const { requests } = apis(app, (req) =>
      new URL(req.url).host === `${app}.example.com`
        ? Response.json({ received: req.headers }, { status: down ? 500 : 200 })
        : undefined,
    );
    const token = bearer(await tokenFor(app));
    const { eventId } = await publishEvent(app, 'NEW_NFT', { token_id: '3' });
    await deliverDue(hook.id);
    const [original] = (await deliveriesOfEvent(hook.id, eventId)) as [string];
    await failed(hook.id, [original], 10);
    down = false;

    const test = await postJson('test', { webhook_id: Number(hook.id) }, token);
    const { value: tested } = await expectValue<{ event_id: string; delivery_id: number }>(test.res, 202);
    await deliverDue(hook.id);
    const resend = await postJson('delivery/resend', { delivery_id: Number(original) }, token);
    const { value: resent } = await expectValue<{ delivery_id: number }>(resend.res, 202);
    await deliverDue(hook.id);
    const recover = await postJson('recover', { webhook_id: Number(hook.id), since: minutesAgo(30) }, token);
    expect((await expectValue<{ deliveries: number }>(recover.res, 202)).value).toEqual({ deliveries: 1 });
    await deliverDue(hook.id);

    const sent = at(requests, `${app}.example.com`);
    // The event's attempt, the test event, the resend, the recovery: in that order.
    expect(sent.map((r) => [r.headers['webhook-id'], JSON.parse(r.body).type])).toEqual([
      [eventId, 'NEW_NFT'],
      [tested.event_id, 'webhook.test'],
      [eventId, 'NEW_NFT'],
      [eventId, 'NEW_NFT'],
    ]);
    for (const req of sent) {
      expect(req.url).toBe(`https://${app}.example.com/hook`);
      expect(req.headers['x-tenant']).toBe('acme');
      expect(req.headers.authorization).toBe('Bearer gateway-secret');
      expect(verifier(hook.secret).verify(req.body, req.headers)).toBeDefined();
    }
    for (const id of [original, String(tested.delivery_id), String(resent.delivery_id)])
      expect((await storedDelivery(hook.id, id))?.status).toBe('succeeded');
    expect(await storedDelivery(hook.id, original)).toMatchObject({ attempts: 2 });

    // The receiver's replies are kept, its echo of the sensitive header masked.
    const { text, value } = await logOf(app, original);
    expect(value.attempt_log).toMatchObject([
      { attempt: 1, status: 500 },
      { attempt: 2, status: 200 },
    ]);
    for (const a of value.attempt_log) {
      expect(JSON.parse(a.body!).received).toMatchObject({ 'x-tenant': 'acme', authorization: MASKED });
    }
    expect(text).not.toContain('gateway-secret');
    expect(JSON.stringify(await endpointSql(hook.id, 'SELECT * FROM delivery_attempts'))).not.toContain(
      'gateway-secret',
    );
  });
});

describe('the erasure of an application with API destinations', () => {
  /** Every row of every table of D1, as text. */
  async function allOfD1(): Promise<string> {
    const { results: tables } = await env.DB.prepare(
      `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'`,
    ).all<{ name: string }>();
    expect(tables.map((t) => t.name)).toEqual(
      expect.arrayContaining(['webhooks', 'webhook_audit', 'idempotency_keys']),
    );
    const rows = [];
    for (const { name } of tables)
      rows.push(name, JSON.stringify((await env.DB.prepare(`SELECT * FROM "${name}"`).all()).results));
    return rows.join('\n');
  }

  /** What D1 holds sealed for the application's webhooks: credentials, sensitive headers, signing secrets. */
  async function sealedOf(app: string): Promise<string[]> {
    const { results } = await env.DB.prepare(
      `SELECT json_extract(destination, '$.sealed') AS credentials, json_extract(headers, '$.sealed') AS headers,
         secret, previous_secret FROM webhooks WHERE app_id = ?1
       UNION ALL SELECT NULL, NULL, json_extract(webhook_row, '$.secret'), NULL FROM idempotency_keys WHERE app_id = ?1`,
    )
      .bind(app)
      .all<Record<string, string | null>>();
    return results.flatMap((r) => Object.values(r).filter((v): v is string => v !== null));
  }

  it('leaves no sealed credential, header or secret of it in D1, and no destination in its audit records', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    const token = bearer(await tokenFor(app));
    const sqs = await register(app, { destination: kinds.aws_sqs });
    const pubsub = await register(app, { destination: kinds.gcp_pubsub });
    // Registered under an Idempotency-Key, whose row keeps the sealed signing secret.
    const keyed = await post({ destination: kinds.cloudflare_queue }, { ...token, 'idempotency-key': `${app}-q` });
    const queue = String((await expectValue<{ webhook_id: number }>(keyed, 201)).value.webhook_id);
    const http = await register(app, {
      headers: { 'X-Tenant': 'acme', Authorization: 'Bearer gateway-secret' },
      sensitive_headers: ['Authorization'],
    });
    const sealed = await sealedOf(app);
    // New credentials by PATCH (the old sealed form goes with it), a signing secret rotated.
    const { secret_access_key: _, ...sqsFields } = kinds.aws_sqs;
    const patched = await fetchAndWait(
      {},
      new Request(URL_, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', ...token },
        body: JSON.stringify({
          webhook_id: Number(sqs.id),
          destination: { ...sqsFields, secret_access_key: 'rotated-key' },
        }),
      }),
    );
    await expectValue(patched);
    await expectValue((await postJson('secret', { webhook_id: Number(pubsub.id) }, token)).res);
    const current = await sealedOf(app);
    const unique = [...new Set([...sealed, ...current])];
    // Four signing secrets and the rotated one's successor, three credentials and the renewed ones, the
    // sensitive header (the previous secret and the key's copy are among them).
    expect(unique).toHaveLength(4 + 1 + 3 + 1 + 1);
    const before = await allOfD1();
    for (const s of unique) expect(before.includes(s)).toBe(current.includes(s));

    const erased = await callApplication('DELETE', await adminHeaders(), { query: appQuery(app) });
    await expectEnvelope(erased, 202, 0, 'success');
    expect((await applicationRow(app))?.erased_at).not.toBeNull();

    const after = await allOfD1();
    for (const s of unique) expect(after).not.toContain(s);
    const left = await env.DB.prepare(
      `SELECT (SELECT COUNT(*) FROM webhooks WHERE app_id = ?1) AS webhooks,
         (SELECT COUNT(*) FROM idempotency_keys WHERE app_id = ?1) AS keys`,
    )
      .bind(app)
      .first();
    expect(left).toEqual({ webhooks: 0, keys: 0 });
    // Its audit records stay, without where it delivered or what it sent.
    const { results: audit } = await env.DB.prepare(
      'SELECT CAST(webhook_id AS TEXT) AS id, action, row_before FROM webhook_audit WHERE app_id = ?1 ORDER BY audit_id',
    )
      .bind(app)
      .all<{ id: string; action: string; row_before: string }>();
    expect(audit.map((a) => [a.id, a.action])).toEqual([
      [sqs.id, 'create'],
      [pubsub.id, 'create'],
      [queue, 'create'],
      [http.id, 'create'],
      [sqs.id, 'update'],
      [pubsub.id, 'rotate_secret'],
    ]);
    for (const { row_before } of audit) {
      const row = JSON.parse(row_before);
      for (const gone of ['url', 'destination', 'headers']) expect(row).not.toHaveProperty(gone);
      for (const named of [kinds.aws_sqs.queue_url, kinds.gcp_pubsub.topic, ACCOUNT, KEY_ID, 'acme'])
        expect(row_before).not.toContain(named);
    }
  });
});
