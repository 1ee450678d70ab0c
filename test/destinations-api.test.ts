// A webhook's destination and custom headers through the API (docs/destinations.md): what POST and
// PATCH accept and refuse, what every reply shows (never a credential), and what D1 holds (the
// credentials sealed, the address in `url` for the duplicate rule).
import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { openSecret, secretKeys } from '../src/webhooks/secrets';
import { snapshot } from './helpers/database';
import { ACCOUNT, KEY_ID, QUEUE, SA_KEY, SECRET_KEY } from './helpers/destinations';
import { doc, expectDocumented, resolve, validate } from './helpers/openapi';
import { expectCreateFail, expectEnvelope, expectUpdateFail, expectValue } from './helpers/replies';
import { get, post, URL_ } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

const patch = async (body: unknown, app: string) =>
  SELF.fetch(
    new Request(URL_, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', ...bearer(await tokenFor(app)) },
      body: JSON.stringify(body),
    }),
  );

const DESTINATIONS = {
  cloudflare_queue: { type: 'cloudflare_queue', account_id: ACCOUNT, queue_id: QUEUE, api_token: 'cf-token-123' },
  aws_sqs: {
    type: 'aws_sqs',
    queue_url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/nft-events',
    access_key_id: KEY_ID,
    secret_access_key: SECRET_KEY,
  },
  aws_eventbridge: {
    type: 'aws_eventbridge',
    region: 'us-east-1',
    event_bus: 'nft-bus',
    source: 'com.example.nft',
    access_key_id: KEY_ID,
    secret_access_key: SECRET_KEY,
  },
  gcp_pubsub: { type: 'gcp_pubsub', topic: 'projects/project-one/topics/nft-events', service_account_key: SA_KEY },
} as const;

const SHOWN = {
  cloudflare_queue: {
    url: `https://api.cloudflare.com/client/v4/accounts/${ACCOUNT}/queues/${QUEUE}/messages`,
    destination: { type: 'cloudflare_queue', account_id: ACCOUNT, queue_id: QUEUE, credentials: 'set' },
    address: `cloudflare_queue:${ACCOUNT}/${QUEUE}`,
    secrets: ['cf-token-123'],
  },
  aws_sqs: {
    url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/nft-events',
    destination: {
      type: 'aws_sqs',
      queue_url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/nft-events',
      access_key_id: KEY_ID,
      credentials: 'set',
    },
    address: 'aws_sqs:https://sqs.eu-west-1.amazonaws.com/123456789012/nft-events',
    secrets: [SECRET_KEY],
  },
  aws_eventbridge: {
    url: 'https://events.us-east-1.amazonaws.com/',
    destination: {
      type: 'aws_eventbridge',
      region: 'us-east-1',
      event_bus: 'nft-bus',
      source: 'com.example.nft',
      access_key_id: KEY_ID,
      credentials: 'set',
    },
    address: 'aws_eventbridge:us-east-1/nft-bus',
    secrets: [SECRET_KEY],
  },
  gcp_pubsub: {
    url: 'https://pubsub.googleapis.com/v1/projects/project-one/topics/nft-events:publish',
    destination: { type: 'gcp_pubsub', topic: 'projects/project-one/topics/nft-events', credentials: 'set' },
    address: 'gcp_pubsub:projects/project-one/topics/nft-events',
    secrets: ['MIIEvQIBADANBgkqhkiG9w0BAQEFAASC'],
  },
} as const;

const row = (id: number | string) =>
  env.DB.prepare('SELECT url, destination, headers FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)')
    .bind(String(id))
    .first<{ url: string; destination: string | null; headers: string | null }>();

const audit = (id: number | string) =>
  env.DB.prepare('SELECT row_before FROM webhook_audit WHERE webhook_id = CAST(?1 AS INTEGER)')
    .bind(String(id))
    .all<{ row_before: string }>();

type Hook = { webhook_id: number; url: string; destination: Record<string, unknown>; headers: Record<string, string> };

describe('POST of a webhook with a destination', () => {
  for (const type of Object.keys(DESTINATIONS) as (keyof typeof DESTINATIONS)[]) {
    it(`registers a ${type} destination: shown without its credentials, stored sealed`, async () => {
      const app = freshApp();
      const body = { destination: DESTINATIONS[type] };
      // docs/openapi.json's request schema accepts it, and documents the replies.
      const registration = resolve(doc.components.schemas.WebhookRegistration);
      expect(validate(registration, body).errors).toEqual([]);
      expect(validate(registration, { ...body, url: 'https://hooks.example.com/x' }).valid).toBe(false);
      const res = await post(body, bearer(await tokenFor(app)));
      await expectDocumented(res, 'post');
      const { text, value } = await expectValue<Hook>(res, 201);
      expect(value.url).toBe(SHOWN[type].url);
      expect(value.destination).toEqual(SHOWN[type].destination);
      expect(value.headers).toEqual({});
      for (const secret of SHOWN[type].secrets) expect(text).not.toContain(secret);
      // GET and the list show the same.
      const got = await get(`webhook_id=${value.webhook_id}`, bearer(await tokenFor(app)));
      await expectDocumented(got, 'get');
      const read = await expectValue<Hook>(got);
      expect(read.value.destination).toEqual(SHOWN[type].destination);
      expect(read.value.url).toBe(SHOWN[type].url);
      const stored = (await row(value.webhook_id))!;
      expect(stored.url).toBe(SHOWN[type].address);
      const destination = JSON.parse(stored.destination!) as Record<string, string>;
      for (const secret of SHOWN[type].secrets) expect(stored.destination).not.toContain(secret);
      const credentials = JSON.parse(await openSecret(await secretKeys(env), destination.sealed!));
      const names = Object.keys(credentials);
      expect(names).toHaveLength(1);
      if (type === 'gcp_pubsub')
        expect(JSON.parse(credentials.service_account_key).client_email).toBe(SA_KEY.client_email);
      else expect(Object.values(credentials)).toEqual([(DESTINATIONS[type] as Record<string, unknown>)[names[0]!]]);
      // The audit record holds no credential, sealed or not.
      const [created] = (await audit(value.webhook_id)).results;
      expect(JSON.parse(created!.row_before).destination).toEqual({ ...destination, sealed: undefined, ...{} });
      expect(created!.row_before).not.toContain(destination.sealed);
    });
  }

  it('shows an HTTP webhook as {"type": "http"}, also when registered with that destination', async () => {
    const app = freshApp();
    const token = bearer(await tokenFor(app));
    const { value } = await expectValue<Hook>(
      await post({ url: 'https://hooks.example.com/a', destination: { type: 'http' } }, token),
      201,
    );
    expect(value.destination).toEqual({ type: 'http' });
    expect((await row(value.webhook_id))!.destination).toBeNull();
  });

  const refused: [string, Record<string, unknown>][] = [
    ['an unknown type', { destination: { type: 'kafka' } }],
    ['a destination that is not an object', { destination: 'aws_sqs' }],
    ['a url with a queue', { url: 'https://hooks.example.com/x', destination: DESTINATIONS.aws_sqs }],
    ['an http destination without url', { destination: { type: 'http' } }],
    ['a missing credential', { destination: { ...DESTINATIONS.cloudflare_queue, api_token: undefined } }],
    [
      'an account id that is not 32 hex digits',
      { destination: { ...DESTINATIONS.cloudflare_queue, account_id: 'abc' } },
    ],
    [
      'a region not in the list',
      { destination: { ...DESTINATIONS.aws_sqs, queue_url: 'https://sqs.moon-north-1.amazonaws.com/123456789012/q' } },
    ],
    [
      'a queue URL on another host',
      { destination: { ...DESTINATIONS.aws_sqs, queue_url: 'https://sqs.eu-west-1.example.com/123456789012/q' } },
    ],
    [
      'an EventBridge region not in the list',
      { destination: { ...DESTINATIONS.aws_eventbridge, region: 'xx-east-9' } },
    ],
    [
      'a bus ARN of another region',
      {
        destination: {
          ...DESTINATIONS.aws_eventbridge,
          event_bus: 'arn:aws:events:eu-west-1:123456789012:event-bus/nft',
        },
      },
    ],
    ['a malformed topic', { destination: { ...DESTINATIONS.gcp_pubsub, topic: 'nft-events' } }],
    [
      'a key without client_email',
      { destination: { ...DESTINATIONS.gcp_pubsub, service_account_key: { ...SA_KEY, client_email: undefined } } },
    ],
    [
      'a key without private_key',
      { destination: { ...DESTINATIONS.gcp_pubsub, service_account_key: { ...SA_KEY, private_key: undefined } } },
    ],
    [
      'a key whose private_key is not a PEM',
      { destination: { ...DESTINATIONS.gcp_pubsub, service_account_key: { ...SA_KEY, private_key: 'not a key' } } },
    ],
    [
      'a key whose private_key is a PEM that is no RSA key',
      {
        destination: {
          ...DESTINATIONS.gcp_pubsub,
          service_account_key: {
            ...SA_KEY,
            private_key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
          },
        },
      },
    ],
    [
      'a key whose token_uri is not Google’s',
      {
        destination: {
          ...DESTINATIONS.gcp_pubsub,
          service_account_key: { ...SA_KEY, token_uri: 'https://attacker.example.com/token' },
        },
      },
    ],
  ];
  for (const [what, body] of refused) {
    it(`refuses ${what}: 400, 64061, nothing stored`, async () => {
      const app = freshApp();
      const before = await snapshot();
      await expectCreateFail(await post(body, bearer(await tokenFor(app))), 400);
      expect(await snapshot()).toEqual(before);
    });
  }

  it('answers 409 for the same destination twice, compared by its address fields, not its url', async () => {
    const app = freshApp();
    const token = bearer(await tokenFor(app));
    await expectValue(await post({ destination: DESTINATIONS.aws_sqs }, token), 201);
    const again = { ...DESTINATIONS.aws_sqs, access_key_id: 'AKIAOTHERKEY0000000', secret_access_key: 'other' };
    await expectEnvelope(await post({ destination: again }, token), 409, 64061, 'create fail');
    // Two buses of one region share a url but are two destinations.
    await expectValue(await post({ destination: DESTINATIONS.aws_eventbridge }, token), 201);
    await expectValue(
      await post({ destination: { ...DESTINATIONS.aws_eventbridge, event_bus: 'other-bus' } }, token),
      201,
    );
    await expectEnvelope(await post({ destination: DESTINATIONS.aws_eventbridge }, token), 409, 64061, 'create fail');
    // An HTTP webhook at the queue's address is another destination.
    await expectValue(await post({ url: SHOWN.aws_sqs.url }, token), 201);
  });
});

describe('PATCH of a destination', () => {
  it('changes its other fields and keeps its credentials when none are sent', async () => {
    const app = freshApp();
    const { value } = await expectValue<Hook>(
      await post({ destination: DESTINATIONS.aws_eventbridge }, bearer(await tokenFor(app))),
      201,
    );
    const sealed = JSON.parse((await row(value.webhook_id))!.destination!).sealed;
    const { secret_access_key: _, ...withoutSecret } = DESTINATIONS.aws_eventbridge;
    const res = await patch(
      { webhook_id: value.webhook_id, destination: { ...withoutSecret, source: 'com.example.other' } },
      app,
    );
    const patched = await expectValue<Hook>(res);
    expect(patched.value.destination).toEqual({ ...SHOWN.aws_eventbridge.destination, source: 'com.example.other' });
    const stored = JSON.parse((await row(value.webhook_id))!.destination!);
    expect(stored).toMatchObject({ source: 'com.example.other', sealed });
    // New credentials replace them.
    await expectValue(
      await patch(
        { webhook_id: value.webhook_id, destination: { ...withoutSecret, secret_access_key: 'new-secret' } },
        app,
      ),
    );
    const renewed = JSON.parse((await row(value.webhook_id))!.destination!).sealed;
    expect(JSON.parse(await openSecret(await secretKeys(env), renewed))).toEqual({ secret_access_key: 'new-secret' });
  });

  it('refuses a new type without its credentials, a url for a queue, and http without url: 400, 64062, unchanged', async () => {
    const app = freshApp();
    const { value } = await expectValue<Hook>(
      await post({ destination: DESTINATIONS.aws_sqs }, bearer(await tokenFor(app))),
      201,
    );
    const before = await snapshot();
    const { api_token: _, ...noToken } = DESTINATIONS.cloudflare_queue;
    await expectUpdateFail(await patch({ webhook_id: value.webhook_id, destination: noToken }, app), 400);
    await expectUpdateFail(await patch({ webhook_id: value.webhook_id, url: 'https://hooks.example.com/x' }, app), 400);
    await expectUpdateFail(await patch({ webhook_id: value.webhook_id, destination: { type: 'http' } }, app), 400);
    await expectUpdateFail(
      await patch(
        { webhook_id: value.webhook_id, destination: { ...DESTINATIONS.aws_sqs, region: 1, queue_url: 'x' } },
        app,
      ),
      400,
    );
    // A service account key that cannot sign.
    const unsigning = {
      ...DESTINATIONS.gcp_pubsub,
      service_account_key: { ...SA_KEY, private_key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' },
    };
    await expectUpdateFail(await patch({ webhook_id: value.webhook_id, destination: unsigning }, app), 400);
    expect(await snapshot()).toEqual(before);
    // Back to HTTP with its URL.
    const http = await patch(
      { webhook_id: value.webhook_id, destination: { type: 'http' }, url: 'https://hooks.example.com/back' },
      app,
    );
    const back = await expectValue<Hook>(http);
    expect(back.value).toMatchObject({ url: 'https://hooks.example.com/back', destination: { type: 'http' } });
    expect(await row(value.webhook_id)).toMatchObject({ url: 'https://hooks.example.com/back', destination: null });
  });

  it('answers 409 when another webhook of the application has the destination', async () => {
    const app = freshApp();
    const token = bearer(await tokenFor(app));
    await expectValue(await post({ destination: DESTINATIONS.gcp_pubsub }, token), 201);
    const { value } = await expectValue<Hook>(await post({ url: 'https://hooks.example.com/p' }, token), 201);
    const res = await patch({ webhook_id: value.webhook_id, destination: DESTINATIONS.gcp_pubsub }, app);
    await expectEnvelope(res, 409, 64062, 'update fail');
    expect(await row(value.webhook_id)).toMatchObject({ url: 'https://hooks.example.com/p', destination: null });
  });
});

describe('custom headers', () => {
  it('are stored with the sensitive ones sealed, and shown masked', async () => {
    const app = freshApp();
    const res = await post(
      {
        url: 'https://hooks.example.com/h',
        headers: { 'X-Tenant': 'acme', Authorization: 'Bearer very-secret' },
        sensitive_headers: ['authorization'],
      },
      bearer(await tokenFor(app)),
    );
    const { text, value } = await expectValue<Hook>(res, 201);
    expect(value.headers).toEqual({ 'X-Tenant': 'acme', Authorization: '••••' });
    expect(text).not.toContain('very-secret');
    const stored = JSON.parse((await row(value.webhook_id))!.headers!);
    expect(stored.values).toEqual({ 'X-Tenant': 'acme' });
    expect(stored.sensitive).toEqual(['Authorization']);
    expect(JSON.parse(await openSecret(await secretKeys(env), stored.sealed))).toEqual({
      Authorization: 'Bearer very-secret',
    });
    const [created] = (await audit(value.webhook_id)).results;
    expect(created!.row_before).not.toContain(stored.sealed);
    // PATCH replaces them; null clears them.
    const changed = await expectValue<Hook>(
      await patch({ webhook_id: value.webhook_id, headers: { 'X-A': 'b' } }, app),
    );
    expect(changed.value.headers).toEqual({ 'X-A': 'b' });
    const cleared = await expectValue<Hook>(await patch({ webhook_id: value.webhook_id, headers: null }, app));
    expect(cleared.value.headers).toEqual({});
    expect((await row(value.webhook_id))!.headers).toBeNull();
  });

  const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v']));
  const refused: [string, Record<string, unknown>][] = [
    ['more than 20', { headers: many }],
    ['host', { headers: { Host: 'example.com' } }],
    ['content-length', { headers: { 'Content-Length': '1' } }],
    ['content-type', { headers: { 'content-type': 'text/plain' } }],
    ['a signature header', { headers: { 'webhook-signature': 'v1,x' } }],
    ['transfer-encoding', { headers: { 'Transfer-Encoding': 'chunked' } }],
    ['connection', { headers: { Connection: 'close' } }],
    ['a name that is not a token', { headers: { 'X Bad': 'v' } }],
    ['a value with a line break', { headers: { 'X-A': 'a\r\nb' } }],
    ['a value over 1 KiB', { headers: { 'X-A': 'a'.repeat(1025) } }],
    ['a sensitive name that is not a header', { headers: { 'X-A': 'a' }, sensitive_headers: ['X-B'] }],
  ];
  for (const [what, body] of refused) {
    it(`refuses ${what}: 400 and nothing stored`, async () => {
      const app = freshApp();
      const before = await snapshot();
      await expectCreateFail(
        await post({ url: 'https://hooks.example.com/h', ...body }, bearer(await tokenFor(app))),
        400,
      );
      expect(await snapshot()).toEqual(before);
    });
  }
});
