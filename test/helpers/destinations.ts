// The APIs of the destinations beyond HTTP (docs/destinations.md), stood in for by the runtime's
// fetch: each type's destination and credentials, the replies each API gives a success, and the
// checks of what reached them (the SigV4 signature recomputed with @smithy/signature-v4 from the
// known credentials; the signature attributes verified with standardwebhooks).
import { SignatureV4 } from '@smithy/signature-v4';
import { exportPKCS8, generateKeyPair } from 'jose';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { expect } from 'vitest';
import { type Received, receiver } from './receiver';

export const KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
export const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
export const ACCOUNT = '0123456789abcdef0123456789abcdef';
export const QUEUE = 'fedcba9876543210fedcba9876543210';
export const CF_TOKEN = 'cf-api-token-abc';
export const GOOGLE_TOKEN = 'ya29.test-access-token';

const keyPair = await generateKeyPair('RS256', { extractable: true });
/** The service account key's public half: what verifies the token grant's assertion. */
export const publicKey = keyPair.publicKey;
export const SA_KEY = {
  type: 'service_account',
  client_email: 'publisher@project-one.iam.gserviceaccount.com',
  private_key: await exportPKCS8(keyPair.privateKey),
  private_key_id: 'key-1',
  token_uri: 'https://oauth2.googleapis.com/token',
};

/** Each type's destination, its queue or topic named after the application (one per test). */
export const destinations = (app: string) => ({
  cloudflare_queue: { type: 'cloudflare_queue', account_id: ACCOUNT, queue_id: QUEUE, api_token: CF_TOKEN },
  aws_sqs: {
    type: 'aws_sqs',
    queue_url: `https://sqs.eu-west-1.amazonaws.com/123456789012/${app}`,
    access_key_id: KEY_ID,
    secret_access_key: SECRET_KEY,
  },
  aws_eventbridge: {
    type: 'aws_eventbridge',
    region: 'us-east-1',
    event_bus: app,
    source: 'com.example.nft',
    access_key_id: KEY_ID,
    secret_access_key: SECRET_KEY,
  },
  gcp_pubsub: { type: 'gcp_pubsub', topic: `projects/project-one/topics/${app}`, service_account_key: SA_KEY },
});

/** The APIs' hosts: the only ones these tests' deliveries may reach, with the application's HTTP receiver. */
export const API_HOSTS = new Set([
  'api.cloudflare.com',
  'sqs.eu-west-1.amazonaws.com',
  'events.us-east-1.amazonaws.com',
  'oauth2.googleapis.com',
  'pubsub.googleapis.com',
]);

export type Reply = (req: Received) => Response | undefined;

/** The APIs' replies by host (each as its reference shows a success), unless `reply` answers first. */
export function apis(app: string, reply: Reply = () => undefined) {
  const requests: Received[] = [];
  const { spy } = receiver((req) => {
    const host = new URL(req.url).host;
    if (host !== `${app}.example.com` && !API_HOSTS.has(host) && !host.startsWith('127.0.0.1')) {
      requests.push(req);
      return new Response(null, { status: 503 });
    }
    // Other tests' objects may still send here: their requests name another application's queues.
    if (
      API_HOSTS.has(host) &&
      !`${req.url} ${req.body}`.includes(app) &&
      host !== 'oauth2.googleapis.com' &&
      host !== 'api.cloudflare.com'
    )
      return new Response(null, { status: 503 });
    requests.push(req);
    const own = reply(req);
    if (own !== undefined) return own;
    const json = (value: unknown) => Response.json(value);
    switch (host) {
      case 'sqs.eu-west-1.amazonaws.com':
        return json({ MD5OfMessageBody: 'x', MessageId: crypto.randomUUID() });
      case 'events.us-east-1.amazonaws.com':
        return json({ Entries: [{ EventId: crypto.randomUUID() }], FailedEntryCount: 0 });
      case 'api.cloudflare.com':
        return json({ success: true, errors: [], messages: [], result: null });
      case 'oauth2.googleapis.com':
        return json({ access_token: GOOGLE_TOKEN, expires_in: 3599, token_type: 'Bearer' });
      case 'pubsub.googleapis.com':
        return json({ messageIds: ['1'] });
      default:
        return new Response('ok');
    }
  });
  return { requests, spy };
}

export const at = (requests: Received[], host: string) => requests.filter((r) => new URL(r.url).host === host);

/** SHA-256 and HMAC-SHA-256 for @smithy/signature-v4, from WebCrypto. */
class Sha256 {
  private readonly chunks: Uint8Array[] = [];
  constructor(private readonly secret?: unknown) {}
  update(data: unknown) {
    this.chunks.push(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    const data = new Uint8Array(await new Blob(this.chunks as unknown as Blob[]).arrayBuffer());
    if (this.secret === undefined) return new Uint8Array(await crypto.subtle.digest('SHA-256', data));
    const key = await crypto.subtle.importKey('raw', bytes(this.secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ]);
    return new Uint8Array(await crypto.subtle.sign('HMAC', key, data));
  }
}
function bytes(data: unknown): Uint8Array {
  if (typeof data === 'string') return new TextEncoder().encode(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  const view = data as ArrayBufferView;
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/**
 * The request's Authorization recomputed from the known credentials over the headers it says it
 * signed: equal only when aws4fetch signed exactly this request, for this service and region.
 */
export async function expectSigV4(req: Received, service: string, region: string) {
  const auth = req.headers.authorization as string;
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=[0-9a-f]{64}$/.exec(
      auth,
    );
  expect(match).not.toBeNull();
  const [, keyId, , signedRegion, signedService, signedHeaders] = match as RegExpExecArray;
  expect({ keyId, signedRegion, signedService }).toEqual({
    keyId: KEY_ID,
    signedRegion: region,
    signedService: service,
  });
  const names = (signedHeaders as string).split(';');
  expect(names).toEqual(expect.arrayContaining(['host', 'x-amz-date', 'x-amz-target']));
  const url = new URL(req.url);
  const headers = Object.fromEntries(names.map((n) => [n, n === 'host' ? url.host : (req.headers[n] as string)]));
  const amzDate = req.headers['x-amz-date'] as string;
  const signingDate = new Date(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  const signer = new SignatureV4({
    service,
    region,
    credentials: { accessKeyId: KEY_ID, secretAccessKey: SECRET_KEY },
    sha256: Sha256,
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: req.method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: url.pathname,
      query: {},
      headers,
      body: req.body,
    },
    { signingDate },
  );
  expect(signed.headers.authorization).toBe(auth);
}

export const verifier = (secret: string) => new StandardWebhook(secret);
export const attributes = (attrs: Record<string, { DataType: string; StringValue: string }>) =>
  Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, v.StringValue]));
