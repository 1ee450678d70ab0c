// Deliveries to destinations beyond HTTP (docs/destinations.md), each request checked against its
// API's reference: the SigV4 signature recomputed with @smithy/signature-v4 from the known
// credentials, the Pub/Sub assertion verified with the key pair's public key, the Queue's bearer,
// the exact bodies and attributes, the SQS and Pub/Sub messages verified with standardwebhooks.
import { env, runInDurableObject } from 'cloudflare:test';
import { jwtVerify } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sealSecret, secretKeys } from '../src/webhooks/secrets';
import {
  ACCOUNT,
  API_HOSTS,
  apis,
  at,
  attributes,
  CF_TOKEN,
  destinations,
  expectSigV4,
  GOOGLE_TOKEN,
  publicKey,
  QUEUE,
  SA_KEY,
  SECRET_KEY,
  verifier,
} from './helpers/destinations';
import {
  deliverDue,
  deliveriesOfEvent,
  endpointOf,
  makeDue,
  pendingAt,
  sendPass,
  storedAttempts,
  storedDelivery,
} from './helpers/objects';
import type { Received } from './helpers/receiver';
import { expectSuccess, expectValue } from './helpers/replies';
import { get, postJson, publishEvent, put, stoppedAfterEachTest } from './helpers/requests';
import { hoursAgo } from './helpers/time';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});
/** The stored reason columns of a webhook. */
const disabledColumns = (id: string) =>
  env.DB.prepare(
    'SELECT disabled_reason, disabled_at, disabled_cause, disabled_cause_at FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)',
  )
    .bind(id)
    .first<Record<'disabled_reason' | 'disabled_at' | 'disabled_cause' | 'disabled_cause_at', string | null>>();

// The alarms stop before the APIs' stand-in does (after-each hooks run last first): no request of
// these tests ever leaves.
const { register } = stoppedAfterEachTest();

describe('delivering to each destination type', () => {
  it('delivers every event once to each of an application’s HTTP and four API destinations, as each API specifies', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    const http = await register(app, { url: `https://${app}.example.com/hook` });
    const hooks = {
      cloudflare_queue: await register(app, { destination: kinds.cloudflare_queue }),
      aws_sqs: await register(app, { destination: kinds.aws_sqs }),
      aws_eventbridge: await register(app, { destination: kinds.aws_eventbridge }),
      gcp_pubsub: await register(app, { destination: kinds.gcp_pubsub }),
    };
    const { requests } = apis(app);
    const events = [
      await publishEvent(app, 'NEW_NFT', { token: '1' }),
      await publishEvent(app, 'NEW_NFT', { token: '2' }),
    ];
    for (const e of events) expect(e.deliveryIds).toHaveLength(5);
    const ids = [http.id, ...Object.values(hooks).map((h) => h.id)];
    await deliverDue(...ids);

    // Nothing went anywhere but the application's receiver and the APIs' own hosts.
    const hosts = new Set(requests.map((r) => new URL(r.url).host));
    expect([...hosts].sort()).toEqual([...API_HOSTS, `${app}.example.com`].sort());

    // HTTP: the body each API's message must carry, by webhook-id.
    const sent = at(requests, `${app}.example.com`);
    expect(sent.map((r) => r.headers['webhook-id']).sort()).toEqual(events.map((e) => e.eventId).sort());
    const bodyOf = new Map(sent.map((r) => [r.headers['webhook-id'] as string, r.body]));

    // SQS: SendMessage in AWS JSON 1.0, the exact body, the signature as String attributes.
    const sqs = at(requests, 'sqs.eu-west-1.amazonaws.com');
    expect(sqs).toHaveLength(2);
    for (const req of sqs) {
      expect(req.method).toBe('POST');
      expect(req.url).toBe('https://sqs.eu-west-1.amazonaws.com/');
      expect(req.headers['content-type']).toBe('application/x-amz-json-1.0');
      expect(req.headers['x-amz-target']).toBe('AmazonSQS.SendMessage');
      await expectSigV4(req, 'sqs', 'eu-west-1');
      const body = JSON.parse(req.body);
      expect(Object.keys(body).sort()).toEqual(['MessageAttributes', 'MessageBody', 'QueueUrl']);
      expect(body.QueueUrl).toBe(kinds.aws_sqs.queue_url);
      const attrs = attributes(body.MessageAttributes);
      expect(Object.keys(attrs).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
      for (const a of Object.values(body.MessageAttributes))
        expect((a as { DataType: string }).DataType).toBe('String');
      expect(body.MessageBody).toBe(bodyOf.get(attrs['webhook-id'] as string));
      expect(verifier(hooks.aws_sqs.secret).verify(body.MessageBody, attrs)).toMatchObject({ type: 'NEW_NFT' });
    }

    // EventBridge: PutEvents, one entry, the payload and its message_id as Detail.
    const bus = at(requests, 'events.us-east-1.amazonaws.com');
    expect(bus).toHaveLength(2);
    const details = [];
    for (const req of bus) {
      expect(req.url).toBe('https://events.us-east-1.amazonaws.com/');
      expect(req.headers['content-type']).toBe('application/x-amz-json-1.1');
      expect(req.headers['x-amz-target']).toBe('AWSEvents.PutEvents');
      await expectSigV4(req, 'events', 'us-east-1');
      const { Entries } = JSON.parse(req.body);
      expect(Entries).toHaveLength(1);
      const [entry] = Entries;
      expect(Object.keys(entry).sort()).toEqual(['Detail', 'DetailType', 'EventBusName', 'Source']);
      expect(entry).toMatchObject({ Source: 'com.example.nft', DetailType: 'NEW_NFT', EventBusName: app });
      const detail = JSON.parse(entry.Detail);
      const { message_id, ...payload } = detail;
      expect(payload).toEqual(JSON.parse(bodyOf.get(message_id) as string));
      details.push(message_id);
    }
    expect(details.sort()).toEqual(events.map((e) => e.eventId).sort());

    // Cloudflare Queue: the push API with its bearer, the payload and its message_id as a JSON message.
    const queue = at(requests, 'api.cloudflare.com');
    expect(queue).toHaveLength(2);
    for (const req of queue) {
      expect(req.url).toBe(`https://api.cloudflare.com/client/v4/accounts/${ACCOUNT}/queues/${QUEUE}/messages`);
      expect(req.headers.authorization).toBe(`Bearer ${CF_TOKEN}`);
      const body = JSON.parse(req.body);
      expect(Object.keys(body).sort()).toEqual(['body', 'content_type']);
      expect(body.content_type).toBe('json');
      const { message_id, ...payload } = body.body;
      expect(payload).toEqual(JSON.parse(bodyOf.get(message_id) as string));
    }

    // Pub/Sub: one token for both (a JWT bearer grant signed with the key), then topics.publish.
    const tokens = at(requests, 'oauth2.googleapis.com');
    expect(tokens).toHaveLength(1);
    const grant = new URLSearchParams(tokens[0]!.body);
    expect(tokens[0]!.url).toBe('https://oauth2.googleapis.com/token');
    expect(tokens[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(grant.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer');
    const { payload: claims, protectedHeader } = await jwtVerify(grant.get('assertion') as string, publicKey, {
      issuer: SA_KEY.client_email,
      audience: SA_KEY.token_uri,
      algorithms: ['RS256'],
    });
    expect(protectedHeader.kid).toBe('key-1');
    expect(claims.scope).toBe('https://www.googleapis.com/auth/pubsub');
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
    const published = at(requests, 'pubsub.googleapis.com');
    expect(published).toHaveLength(2);
    for (const req of published) {
      expect(req.url).toBe(`https://pubsub.googleapis.com/v1/projects/project-one/topics/${app}:publish`);
      expect(req.headers.authorization).toBe(`Bearer ${GOOGLE_TOKEN}`);
      const { messages } = JSON.parse(req.body);
      expect(messages).toHaveLength(1);
      expect(Object.keys(messages[0]).sort()).toEqual(['attributes', 'data']);
      const data = new TextDecoder().decode(Uint8Array.from(atob(messages[0].data), (c) => c.charCodeAt(0)));
      expect(data).toBe(bodyOf.get(messages[0].attributes['webhook-id']));
      expect(verifier(hooks.gcp_pubsub.secret).verify(data, messages[0].attributes)).toMatchObject({ type: 'NEW_NFT' });
    }

    // Each delivery succeeded, once, with the API's status and reply in its log.
    for (const [i, id] of ids.entries()) {
      for (const e of events) {
        const deliveryId = e.deliveryIds[i] as string;
        expect((await storedDelivery(id, deliveryId))?.status).toBe('succeeded');
        const attempts = await storedAttempts(id, deliveryId);
        expect(attempts).toHaveLength(1);
        expect(attempts[0]).toMatchObject({ status: 200, error: null });
        expect(attempts[0]!.body).not.toContain(GOOGLE_TOKEN);
      }
    }
  });

  it('groups a FIFO webhook’s SQS messages and orders its Pub/Sub messages by the webhook id', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    const sqs = await register(app, {
      destination: { ...kinds.aws_sqs, queue_url: `${kinds.aws_sqs.queue_url}.fifo` },
      ordering: 'fifo',
    });
    const pubsub = await register(app, { destination: kinds.gcp_pubsub, ordering: 'fifo' });
    const { requests } = apis(app);
    const { eventId } = await publishEvent(app);
    await deliverDue(sqs.id, pubsub.id);
    const [send] = at(requests, 'sqs.eu-west-1.amazonaws.com');
    const body = JSON.parse(send!.body);
    expect(body.MessageGroupId).toBe(sqs.id);
    expect(body.MessageDeduplicationId).toBe(eventId);
    expect(body.QueueUrl).toBe(`${kinds.aws_sqs.queue_url}.fifo`);
    const [publish] = at(requests, 'pubsub.googleapis.com');
    expect(JSON.parse(publish!.body).messages[0].orderingKey).toBe(pubsub.id);
  });

  it('retries a throttled request by the schedule, and succeeds on the next attempt', async () => {
    const app = freshApp();
    const hook = await register(app, { destination: destinations(app).aws_sqs });
    let calls = 0;
    const { requests } = apis(app, (req) => {
      if (new URL(req.url).host !== 'sqs.eu-west-1.amazonaws.com') return undefined;
      calls++;
      return calls === 1
        ? Response.json(
            { __type: 'com.amazonaws.sqs#ThrottlingException', message: 'Rate exceeded' },
            { status: 400, headers: { 'x-amzn-query-error': 'ThrottlingException;Sender' } },
          )
        : undefined;
    });
    const { deliveryIds } = await publishEvent(app);
    const [id] = deliveryIds as [string];
    await deliverDue(hook.id);
    const after = (await storedDelivery(hook.id, id))!;
    expect(after).toMatchObject({ status: 'pending', attempts: 1 });
    expect((await storedAttempts(hook.id, id))[0]).toMatchObject({ status: 400, error: null });
    expect((await storedAttempts(hook.id, id))[0]!.body).toContain('ThrottlingException');
    // Its next attempt, when due.
    await runInDurableObject(endpointOf(hook.id), (_, state) =>
      state.storage.sql.exec(
        'UPDATE deliveries SET next_attempt_at = ?1 WHERE delivery_id = CAST(?2 AS INTEGER)',
        new Date(Date.now() - 1000).toISOString(),
        id,
      ),
    );
    await deliverDue(hook.id);
    expect(await storedDelivery(hook.id, id)).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(at(requests, 'sqs.eu-west-1.amazonaws.com')).toHaveLength(2);
  });

  it.each([
    [
      'SQS’s ThrottlingException (a 400)',
      'aws_sqs',
      'sqs.eu-west-1.amazonaws.com',
      () => Response.json({ __type: 'com.amazonaws.sqs#ThrottlingException' }, { status: 400 }),
    ],
    [
      'Pub/Sub’s 429',
      'gcp_pubsub',
      'pubsub.googleapis.com',
      () => Response.json({ error: { code: 429, status: 'RESOURCE_EXHAUSTED' } }, { status: 429 }),
    ],
    [
      'an EventBridge entry throttled',
      'aws_eventbridge',
      'events.us-east-1.amazonaws.com',
      () =>
        Response.json({
          FailedEntryCount: 1,
          Entries: [{ ErrorCode: 'ThrottlingException', ErrorMessage: 'Rate exceeded' }],
        }),
    ],
  ] as const)(
    'does not count %s toward auto-disable: a webhook failing for days is not disabled by it, nor one starts failing',
    async (_, type, host, reply) => {
      const app = freshApp();
      const kind = destinations(app)[type];
      const failing = await register(app, { destination: kind });
      // A second of the same type, at another queue, bus or topic: healthy.
      const address = Object.entries(kind).find(([k]) => ['queue_url', 'event_bus', 'topic'].includes(k)) as [
        string,
        string,
      ];
      const healthy = await register(app, { destination: { ...kind, [address[0]]: `${address[1]}-2` } });
      apis(app, (req) => (new URL(req.url).host === host ? reply() : undefined));
      const since = hoursAgo(200);
      await env.DB.prepare('UPDATE webhooks SET failing_since = ?2 WHERE webhook_id = CAST(?1 AS INTEGER)')
        .bind(failing.id, since)
        .run();
      const { eventId } = await publishEvent(app);
      await deliverDue(failing.id, healthy.id);
      for (const hook of [failing, healthy]) {
        const [id] = await deliveriesOfEvent(hook.id, eventId);
        expect(await storedDelivery(hook.id, id as string)).toMatchObject({ status: 'pending', attempts: 1 });
      }
      const { results } = await env.DB.prepare(
        'SELECT is_enabled, failing_since FROM webhooks WHERE app_id = ?1 ORDER BY webhook_id',
      )
        .bind(app)
        .all();
      expect(results).toEqual([
        { is_enabled: 1, failing_since: since },
        { is_enabled: 1, failing_since: null },
      ]);
    },
  );

  it('counts an EventBridge entry that failed as a failed attempt, with its ErrorCode recorded', async () => {
    const app = freshApp();
    const hook = await register(app, { destination: destinations(app).aws_eventbridge });
    apis(app, (req) =>
      new URL(req.url).host === 'events.us-east-1.amazonaws.com'
        ? Response.json({
            Entries: [{ ErrorCode: 'InternalFailure', ErrorMessage: 'try again' }],
            FailedEntryCount: 1,
          })
        : undefined,
    );
    const { deliveryIds } = await publishEvent(app);
    const [id] = deliveryIds as [string];
    await deliverDue(hook.id);
    expect(await storedDelivery(hook.id, id)).toMatchObject({ status: 'pending', attempts: 1 });
    const [attempt] = await storedAttempts(hook.id, id);
    expect(attempt).toMatchObject({ status: 200, error: 'rejected' });
    expect(attempt!.body).toContain('InternalFailure');
    const row = await env.DB.prepare('SELECT failing_since FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(hook.id)
      .first<{ failing_since: string | null }>();
    expect(row?.failing_since).not.toBeNull();
  });

  it('disables a destination refused with 403 after the schedule, naming why in disabled_reason, its record and event', async () => {
    const app = freshApp();
    const hook = await register(app, { destination: destinations(app).aws_sqs });
    const listener = await register(app, { url: `https://${app}.example.com/ops`, event_types: ['endpoint.disabled'] });
    const { requests } = apis(app, (req) =>
      new URL(req.url).host === 'sqs.eu-west-1.amazonaws.com'
        ? Response.json(
            { __type: 'com.amazon.coral.service#AccessDeniedException', message: 'not authorized' },
            { status: 403 },
          )
        : undefined,
    );
    // Failing for longer than AUTO_DISABLE_AFTER_HOURS already.
    await env.DB.prepare('UPDATE webhooks SET failing_since = ?2 WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(hook.id, hoursAgo(200))
      .run();
    const { deliveryIds } = await publishEvent(app);
    await deliverDue(hook.id);
    const [attempt] = await storedAttempts(hook.id, deliveryIds[0] as string);
    expect(attempt).toMatchObject({ status: 403 });
    expect(attempt!.body).toContain('AccessDeniedException');
    expect(attempt!.body).not.toContain(SECRET_KEY);
    const { value } = await expectValue<{ is_enabled: boolean; disabled_reason: string; url: string }>(
      await get(`webhook_id=${hook.id}`, bearer(await tokenFor(app))),
    );
    expect(value).toMatchObject({ is_enabled: false, disabled_reason: 'forbidden' });
    expect(value.url).toBe(destinations(app).aws_sqs.queue_url);
    const stored = await disabledColumns(hook.id);
    expect(stored).toMatchObject({ disabled_reason: 'failing', disabled_cause: 'forbidden' });
    expect(stored?.disabled_cause_at).toBe(stored?.disabled_at);
    const disable = await env.DB.prepare(
      "SELECT reason FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER) AND action = 'disable'",
    )
      .bind(hook.id)
      .first<{ reason: string }>();
    expect(disable?.reason).toMatch(
      /^every attempt failed since .*; the destination answered 403 Forbidden \(AccessDeniedException\): access denied/,
    );
    // The operational event names the queue's address and why.
    await deliverDue(listener.id);
    const [told] = at(requests, `${app}.example.com`);
    const event = JSON.parse(told!.body);
    expect(event.type).toBe('endpoint.disabled');
    expect(event.data).toMatchObject({
      url: destinations(app).aws_sqs.queue_url,
      reason: 'forbidden',
      why: expect.stringContaining('403 Forbidden'),
    });
    // Enabled again: no reason; disabled by hand: the application's.
    const token = bearer(await tokenFor(app));
    const reason = async () =>
      (await expectValue<{ disabled_reason: string | null }>(await get(`webhook_id=${hook.id}`, token))).value
        .disabled_reason;
    await expectSuccess(await put({ webhook_id: Number(hook.id), is_enabled: true }, token));
    expect(await reason()).toBeNull();
    await expectSuccess(await put({ webhook_id: Number(hook.id), is_enabled: false }, token));
    expect(await reason()).toBe('application');
    // Disabled for failing again by the release before (it knows nothing of causes): the old cause
    // no longer applies.
    await env.DB.prepare(
      `UPDATE webhooks SET is_enabled = 0, disabled_reason = 'failing',
         disabled_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+1 second') WHERE webhook_id = CAST(?1 AS INTEGER)`,
    )
      .bind(hook.id)
      .run();
    expect(await reason()).toBe('failing');
  });

  it.each([
    [
      'Pub/Sub’s 404 for a topic that does not exist',
      'gcp_pubsub',
      'pubsub.googleapis.com',
      404,
      { error: { code: 404, message: 'Resource not found', status: 'NOT_FOUND' } },
      '404 Not Found',
    ],
    [
      'SQS’s QueueDoesNotExist (a 400)',
      'aws_sqs',
      'sqs.eu-west-1.amazonaws.com',
      400,
      { __type: 'com.amazonaws.sqs#QueueDoesNotExist', message: 'The specified queue does not exist.' },
      '400 (QueueDoesNotExist)',
    ],
    [
      'EventBridge’s ResourceNotFoundException (a 400)',
      'aws_eventbridge',
      'events.us-east-1.amazonaws.com',
      400,
      { __type: 'ResourceNotFoundException', Message: 'Event bus x does not exist.' },
      '400 (ResourceNotFoundException)',
    ],
  ] as const)('names %s as not_found when it disables the webhook', async (_, type, host, status, reply, answer) => {
    const app = freshApp();
    const hook = await register(app, { destination: destinations(app)[type] });
    apis(app, (req) => (new URL(req.url).host === host ? Response.json(reply, { status }) : undefined));
    await env.DB.prepare('UPDATE webhooks SET failing_since = ?2 WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(hook.id, hoursAgo(200))
      .run();
    await publishEvent(app);
    await deliverDue(hook.id);
    const { value } = await expectValue<{ is_enabled: boolean; disabled_reason: string }>(
      await get(`webhook_id=${hook.id}`, bearer(await tokenFor(app))),
    );
    expect(value).toMatchObject({ is_enabled: false, disabled_reason: 'not_found' });
    const disable = await env.DB.prepare(
      "SELECT reason FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER) AND action = 'disable'",
    )
      .bind(hook.id)
      .first<{ reason: string }>();
    expect(disable?.reason).toContain(`the destination answered ${answer}: it does not exist`);
  });

  it('keeps "failing" for an HTTP endpoint’s own 403, and for an API’s 400 that names nothing', async () => {
    const app = freshApp();
    const http = await register(app, { url: `https://${app}.example.com/hook` });
    const sqs = await register(app, { destination: destinations(app).aws_sqs });
    apis(app, (req) => {
      const { host } = new URL(req.url);
      if (host === `${app}.example.com`) return new Response('no', { status: 403 });
      if (host === 'sqs.eu-west-1.amazonaws.com')
        return Response.json({ __type: 'com.amazonaws.sqs#InvalidParameterValue', message: 'bad' }, { status: 400 });
      return undefined;
    });
    await env.DB.prepare('UPDATE webhooks SET failing_since = ?1 WHERE app_id = ?2').bind(hoursAgo(200), app).run();
    await publishEvent(app);
    await deliverDue(http.id, sqs.id);
    for (const hook of [http, sqs]) {
      const { value } = await expectValue<{ is_enabled: boolean; disabled_reason: string }>(
        await get(`webhook_id=${hook.id}`, bearer(await tokenFor(app))),
      );
      expect(value).toMatchObject({ is_enabled: false, disabled_reason: 'failing' });
      expect(await disabledColumns(hook.id)).toMatchObject({ disabled_reason: 'failing', disabled_cause: null });
    }
  });

  it('sends to the operator’s stand-in (DESTINATION_API_BASES), signed for it, and shows the real address', async () => {
    const app = freshApp();
    const hook = await register(app, { destination: destinations(app).aws_sqs });
    const { requests } = apis(app, (req) =>
      req.url.startsWith('https:') ? new Response(null, { status: 503 }) : undefined,
    );
    const { deliveryIds } = await publishEvent(app);
    // The object's own alarm may be sending it to the real host, with the test settings (answered
    // 503 here, so retried later): once any pass of it has ended (a pass under way would record its
    // attempt over makeDue), due again now, for the pass with the stand-in.
    await deliverDue(hook.id);
    await makeDue(hook.id, deliveryIds[0] as string);
    await sendPass(hook.id, { DESTINATION_API_BASES: 'aws_sqs=http://127.0.0.1:9324 gcp_oauth=http://127.0.0.1:9325' });
    const standIn = at(requests, '127.0.0.1:9324');
    expect(standIn).toHaveLength(1);
    expect(requests.every((r) => ['127.0.0.1:9324', 'sqs.eu-west-1.amazonaws.com'].includes(new URL(r.url).host))).toBe(
      true,
    );
    const [req] = standIn as [Received];
    expect(req.url).toBe('http://127.0.0.1:9324/');
    await expectSigV4(req, 'sqs', 'eu-west-1');
    expect(JSON.parse(req.body).QueueUrl).toBe(destinations(app).aws_sqs.queue_url);
    const { value } = await expectValue<{ url: string }>(
      await get(`webhook_id=${hook.id}`, bearer(await tokenFor(app))),
    );
    expect(value.url).toBe(destinations(app).aws_sqs.queue_url);
  });

  it('sends an HTTP webhook’s custom headers, sensitive ones opened, with every attempt and test event', async () => {
    const app = freshApp();
    const hook = await register(app, {
      url: `https://${app}.example.com/hook`,
      headers: { 'X-Tenant': 'acme', Authorization: 'Bearer gateway-secret' },
      sensitive_headers: ['Authorization'],
    });
    const { requests } = apis(app);
    await publishEvent(app);
    const { res } = await postJson('test', { webhook_id: Number(hook.id) }, bearer(await tokenFor(app)));
    await expectValue(res, 202);
    await deliverDue(hook.id);
    const sent = at(requests, `${app}.example.com`);
    expect(sent).toHaveLength(2);
    for (const req of sent) {
      expect(req.headers['x-tenant']).toBe('acme');
      expect(req.headers.authorization).toBe('Bearer gateway-secret');
      expect(verifier(hook.secret).verify(req.body, req.headers)).toBeDefined();
    }
  });

  it('asks for one Pub/Sub token for a pass’s concurrent attempts, not one each', async () => {
    const app = freshApp();
    // Its own key: no token for it is cached yet.
    const key = { ...SA_KEY, client_email: `${app}@project-one.iam.gserviceaccount.com` };
    const hook = await register(app, { destination: { ...destinations(app).gcp_pubsub, service_account_key: key } });
    const { requests } = apis(app);
    // Four due at once, sent in one pass, concurrently.
    await pendingAt(hook.id, app, 4);
    await deliverDue(hook.id);
    expect(at(requests, 'pubsub.googleapis.com')).toHaveLength(4);
    const grants = at(requests, 'oauth2.googleapis.com').filter((r) => r.body.includes('assertion='));
    const issuers = grants.map(
      (g) =>
        JSON.parse(
          atob(
            (new URLSearchParams(g.body).get('assertion') as string)
              .split('.')[1]!
              .replace(/-/g, '+')
              .replace(/_/g, '/'),
          ),
        ).iss,
    );
    expect(issuers.filter((iss) => iss === key.client_email)).toHaveLength(1);
  });

  it('records a refused token grant, and a key that cannot sign, as failed attempts that publish nothing', async () => {
    const app = freshApp();
    const kinds = destinations(app);
    // Its own key: a token the earlier tests got for SA_KEY is still reused.
    const refused = await register(app, {
      destination: {
        ...kinds.gcp_pubsub,
        service_account_key: { ...SA_KEY, client_email: 'refused@project-one.iam.gserviceaccount.com' },
      },
    });
    const unusable = await register(app, {
      destination: { ...kinds.gcp_pubsub, topic: `projects/project-one/topics/${app}-2` },
    });
    // A key that cannot sign, as one stored before registration checked keys is: sealed in place.
    const broken = { ...SA_KEY, private_key: '-----BEGIN PRIVATE KEY-----\nYWJjZA==\n-----END PRIVATE KEY-----\n' };
    const sealed = await sealSecret(
      await secretKeys(env),
      JSON.stringify({ service_account_key: JSON.stringify(broken) }),
    );
    await env.DB.prepare(
      `UPDATE webhooks SET destination = json_set(destination, '$.sealed', ?2) WHERE webhook_id = CAST(?1 AS INTEGER)`,
    )
      .bind(unusable.id, sealed)
      .run();
    const { requests } = apis(app, (req) =>
      new URL(req.url).host === 'oauth2.googleapis.com'
        ? Response.json({ error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }, { status: 400 })
        : undefined,
    );
    const { deliveryIds } = await publishEvent(app);
    await deliverDue(refused.id, unusable.id);
    const [first] = await storedAttempts(refused.id, deliveryIds[0] as string);
    expect(first).toMatchObject({ status: 400, error: null });
    expect(first!.body).toContain('invalid_grant');
    const [second] = await storedAttempts(unusable.id, deliveryIds[1] as string);
    expect(second).toMatchObject({ status: null, error: 'rejected' });
    expect(await storedDelivery(unusable.id, deliveryIds[1] as string)).toMatchObject({
      status: 'pending',
      attempts: 1,
    });
    expect(at(requests, 'pubsub.googleapis.com')).toHaveLength(0);
    expect(at(requests, 'oauth2.googleapis.com')).toHaveLength(1);
  });
});
