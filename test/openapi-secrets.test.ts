import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { SECRET_PATH } from '../src/webhooks/routes';
import { insertWebhook, webhooksOf } from './helpers/database';
import { deliverDue } from './helpers/objects';
import {
  broken,
  doc,
  expectDocumented,
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
import { expectValue, SECRET, type Webhook } from './helpers/replies';
import { eventRequest, fetchAndWait, fetchWith, MAX_BODY_BYTES, PATH, secretRequest, URL_ } from './helpers/requests';
import { bearer, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('docs/openapi.json: reading a secret', () => {
  // app-s has a webhook registered through the API (with its secret) and one stored without a
  // secret; app-t has another.
  let token: string;
  let hook: Webhook & { secret: string };
  let legacy: string;
  let foreign: string;
  /** The secret each 200 answered, by its label. */
  const secrets = new Map<string, string>();
  beforeAll(async () => {
    token = await tokenFor('app-s');
    const created = await fetchWith(
      {},
      new Request(URL_, {
        method: 'POST',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'https://hooks.example.com/secret-doc', event_types: ['nft.minted'] }),
      }),
    );
    hook = (await expectValue<Webhook & { secret: string }>(created, 201)).value;
    legacy = await insertWebhook('app-s');
    foreign = await insertWebhook('app-t');
  });

  it('documents every reply of reading a secret: status, body schema and headers', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const readOnly = tokenFor('app-s', { scp: ['webhooks:read'] });
    const secret: [string, () => Promise<Response>][] = [
      ['200', () => fetchWith({}, secretRequest(`webhook_id=${hook.webhook_id}`, bearer(token)))],
      ['200 given now', () => fetchWith({}, secretRequest(`webhook_id=${legacy}`, bearer(token)))],
      [
        '200 bookmark not read',
        () =>
          fetchWith(
            {},
            secretRequest(`webhook_id=${hook.webhook_id}`, { ...bearer(token), 'x-d1-bookmark': 'first-primary' }),
          ),
      ],
      ['400', () => fetchWith({}, secretRequest('webhook_id=abc', bearer(token)))],
      ['400 missing', () => fetchWith({}, secretRequest('', bearer(token)))],
      ['400 repeated', () => fetchWith({}, secretRequest(`webhook_id=${legacy}&webhook_id=${legacy}`, bearer(token)))],
      ['401', () => fetchWith({}, secretRequest(`webhook_id=${legacy}`, {}))],
      ['401 invalid_token', () => fetchWith({}, secretRequest(`webhook_id=${legacy}`, bearer('a.b.c')))],
      ['403', async () => fetchWith({}, secretRequest(`webhook_id=${legacy}`, bearer(await readOnly)))],
      ['404', () => fetchWith({}, secretRequest(`webhook_id=${foreign}`, bearer(token)))],
      ['404 missing', () => fetchWith({}, secretRequest('webhook_id=9223372036854775807', bearer(token)))],
      ['429', () => fetchWith(limited, secretRequest(`webhook_id=${legacy}`, bearer(token)))],
      ['500', () => fetchWith({ DB: broken() }, secretRequest(`webhook_id=${legacy}`, bearer(token)))],
      [
        '500 configuration',
        () => fetchWith({ WEBHOOK_SECRET_KEY: '' }, secretRequest(`webhook_id=${legacy}`, bearer(token))),
      ],
      ['503', () => fetchWith({ DB: overloaded() }, secretRequest(`webhook_id=${legacy}`, bearer(token)))],
    ];
    for (const [expected, send] of secret) {
      const res = await send();
      expect(String(res.status), `GET secret ${expected}`).toBe(expected.slice(0, 3));
      // Every reply that used D1 carries its bookmark.
      if (['200', '404', '500', '503'].includes(expected.slice(0, 3)) && expected !== '500 configuration') {
        expect(res.headers.get('x-d1-bookmark'), `GET secret ${expected}`).not.toBeNull();
      }
      if (res.status === 200) {
        secrets.set(expected, ((await res.clone().json()) as { value: { secret: string } }).value.secret);
      }
      await expectDocumented(res, 'get', SECRET_PATH);
    }
  });

  it('answers the secret the registration showed; the one given to an older webhook stays', async () => {
    expect(secrets.get('200')).toBe(hook.secret);
    expect(secrets.get('200 given now')).toMatch(SECRET);
    const again = await fetchWith({}, secretRequest(`webhook_id=${legacy}`, bearer(token)));
    expect((await expectValue<{ secret: string }>(again)).value.secret).toBe(secrets.get('200 given now'));
  });

  it('answers other methods on the secret path 405, and the path with a slash is unknown', async () => {
    const publisher = await tokenFor('platform-svc', { scope: 'events:publish' });
    await expectOtherMethodsRefused(SECRET_PATH, '?webhook_id=1', ['PUT', 'HEAD', 'DELETE'], publisher);
  });
});

describe('docs/openapi.json: rotating a secret', () => {
  let token: string;
  let hook: Webhook & { secret: string };
  /** What each success answered, by its label. */
  let values: Map<string, unknown>;
  beforeAll(async () => {
    token = await tokenFor('app-r');
  });

  it('documents every reply of rotating a secret: status, body schema and headers', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const created = await fetchWith(
      {},
      postTo(PATH, bearer(token), JSON.stringify({ url: 'https://hooks.example.com/rotate' })),
    );
    hook = (await expectValue<Webhook & { secret: string }>(created, 201)).value;
    // Stored without a secret: its first rotation gives it one.
    const legacy = await insertWebhook('app-r');
    const foreign = await insertWebhook('app-q');
    const rotate = (headers: Record<string, string>, body: unknown, type?: string) =>
      postTo(SECRET_PATH, headers, typeof body === 'string' ? body : JSON.stringify(body), type);

    values = await expectEachDocumented(
      'post',
      SECRET_PATH,
      [
        ['200', () => fetchWith({}, rotate(bearer(token), { webhook_id: hook.webhook_id }))],
        ['200 string id, no secret before', () => fetchWith({}, rotate(bearer(token), { webhook_id: legacy }))],
        ['400', () => fetchWith({}, rotate(bearer(token), { webhook_id: 'x' }))],
        ['400 missing', () => fetchWith({}, rotate(bearer(token), {}))],
        ['400 JSON', () => fetchWith({}, rotate(bearer(token), '['))],
        ['401', () => fetchWith({}, rotate({}, { webhook_id: legacy }))],
        ['401 invalid_token', () => fetchWith({}, rotate(bearer('a.b.c'), { webhook_id: legacy }))],
        ['404', () => fetchWith({}, rotate(bearer(token), { webhook_id: foreign }))],
        ['404 missing', () => fetchWith({}, rotate(bearer(token), { webhook_id: '9223372036854775807' }))],
        ['413', () => fetchWith({}, rotate(bearer(token), sizedBody(MAX_BODY_BYTES + 1, { webhook_id: legacy })))],
        ['415', () => fetchWith({}, rotate(bearer(token), { webhook_id: legacy }, 'text/plain'))],
        ['429', () => fetchWith(limited, rotate(bearer(token), { webhook_id: legacy }))],
        ['500', () => fetchWith({ DB: broken() }, rotate(bearer(token), { webhook_id: legacy }))],
        [
          '500 configuration',
          () => fetchWith({ WEBHOOK_SECRET_KEY: '' }, rotate(bearer(token), { webhook_id: legacy })),
        ],
        ['503', () => fetchWith({ DB: overloaded() }, rotate(bearer(token), { webhook_id: legacy }))],
      ],
      ['200', '404', '500', '503'],
    );
  });

  it('answers the new secret, and GET answers it from then on', async () => {
    const rotated = (values.get('200') as { secret: string }).secret;
    expect(rotated).toMatch(SECRET);
    expect(rotated).not.toBe(hook.secret);
    expect((values.get('200 string id, no secret before') as { secret: string }).secret).toMatch(SECRET);
    const read = await fetchWith({}, secretRequest(`webhook_id=${hook.webhook_id}`, bearer(token)));
    expect((await expectValue<{ secret: string }>(read)).value.secret).toBe(rotated);
  });

  it('signs a delivery made then as webhooks.nftEvent says: two signatures, the new secret’s first', async () => {
    const rotated = (values.get('200') as { secret: string }).secret;
    const { requests } = receiver();
    const published = await fetchAndWait(
      {},
      eventRequest({ app_id: 'app-r', type: 'nft.minted', data: {} }, bearer(await platformToken())),
    );
    await expectValue(published, 202);
    await deliverDue(...(await webhooksOf('app-r')).map((w) => w.webhook_id));
    const request = requests.find((r) => r.url === hook.url) as Received;
    const operation = resolve(doc.webhooks.nftEvent.post) as {
      parameters: { name: string; required?: boolean; schema: unknown }[];
    };
    for (const parameter of operation.parameters) {
      const header = request.headers[parameter.name.toLowerCase()];
      if (parameter.required) expect(header, parameter.name).toBeDefined();
      if (header !== undefined) expect(validate(parameter.schema, header).errors, parameter.name).toEqual([]);
    }
    const signatures = (request.headers['webhook-signature'] as string).split(' ');
    expect(signatures).toHaveLength(2);
    const one = (signature: string | undefined) => ({ ...request.headers, 'webhook-signature': signature as string });
    expect(() => new StandardWebhook(rotated).verify(request.body, one(signatures[0]))).not.toThrow();
    expect(() => new StandardWebhook(hook.secret).verify(request.body, one(signatures[1]))).not.toThrow();
    expect(() => new StandardWebhook(hook.secret).verify(request.body, one(signatures[0]))).toThrow();
  });

  it("its rotation schema accepts and refuses the bodies the Worker's rotation does", async () => {
    const id = await insertWebhook('app-rotate-schema');
    await expectSchemaAgrees('POST', SECRET_PATH, await tokenFor('app-rotate-schema'), [
      `{"webhook_id": ${id}}`,
      `{"webhook_id": "${id}"}`,
      `{"webhook_id": "00${id}", "extra": [1]}`,
      '{"webhook_id": 7}',
      '{"webhook_id": 7.5}',
      '{"webhook_id": "7.5"}',
      '{"webhook_id": "x"}',
      '{"webhook_id": true}',
      '{"webhook_id": null}',
      '{"webhook_id": 0}',
      '{"webhook_id": "0"}',
      '{"webhook_id": -7}',
      '{}',
      '[7]',
      '"7"',
      'null',
    ]);
  });
});
