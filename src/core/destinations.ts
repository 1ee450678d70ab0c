// Where a webhook delivers (docs/destinations.md): an HTTP endpoint, or a Cloudflare Queue, an
// Amazon SQS queue, an Amazon EventBridge bus or a Google Pub/Sub topic. Each type's fields, which
// of them are credentials (sealed at rest, never shown), their rules, and the one address that
// names a destination (duplicates, the rate's host). Pure: the webhooks' routes validate with it,
// the senders (deliveries/destinations/) read the same description.
import { InvalidInput } from './errors';

export const DESTINATION_TYPES = ['http', 'cloudflare_queue', 'aws_sqs', 'aws_eventbridge', 'gcp_pubsub'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];
/** The types that are not HTTP: each reaches one API at its fixed hosts. */
export type ApiDestinationType = Exclude<DestinationType, 'http'>;

/** A destination as stored, without its credentials: its type and its other fields. */
export interface DestinationFields {
  type: DestinationType;
  [field: string]: string;
}

/** A destination as given: its fields, and its credentials in clear (null: not sent, keep the stored ones). */
export interface GivenDestination {
  fields: DestinationFields;
  credentials: Record<string, string> | null;
}

/** Each type's fields, in order, and which of them are credentials. */
export const DESTINATION_FIELDS: Record<DestinationType, { fields: string[]; credentials: string[] }> = {
  http: { fields: [], credentials: [] },
  cloudflare_queue: { fields: ['account_id', 'queue_id'], credentials: ['api_token'] },
  aws_sqs: { fields: ['queue_url', 'access_key_id'], credentials: ['secret_access_key'] },
  aws_eventbridge: {
    fields: ['region', 'event_bus', 'source', 'access_key_id'],
    credentials: ['secret_access_key'],
  },
  gcp_pubsub: { fields: ['topic'], credentials: ['service_account_key'] },
};

/** AWS's commercial regions, as published (the only ones a destination may name). */
export const AWS_REGIONS: ReadonlySet<string> = new Set([
  'us-east-1',
  'us-east-2',
  'us-west-1',
  'us-west-2',
  'af-south-1',
  'ap-east-1',
  'ap-east-2',
  'ap-south-1',
  'ap-south-2',
  'ap-southeast-1',
  'ap-southeast-2',
  'ap-southeast-3',
  'ap-southeast-4',
  'ap-southeast-5',
  'ap-southeast-7',
  'ap-northeast-1',
  'ap-northeast-2',
  'ap-northeast-3',
  'ca-central-1',
  'ca-west-1',
  'eu-central-1',
  'eu-central-2',
  'eu-west-1',
  'eu-west-2',
  'eu-west-3',
  'eu-south-1',
  'eu-south-2',
  'eu-north-1',
  'il-central-1',
  'me-south-1',
  'me-central-1',
  'mx-central-1',
  'sa-east-1',
]);

export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

const HEX32 = /^[0-9a-f]{32}$/;
const SQS_URL = /^https:\/\/sqs\.([a-z0-9-]+)\.amazonaws\.com\/(\d{12})\/([A-Za-z0-9_-]{1,75}(?:\.fifo)?)$/;
const ACCESS_KEY_ID = /^[A-Z0-9]{16,128}$/;
const VISIBLE = /^[\x21-\x7e]+$/;
const BUS_NAME = /^[A-Za-z0-9._/-]{1,256}$/;
const BUS_ARN = /^arn:aws[a-z-]*:events:([a-z0-9-]+):(\d{12}):event-bus\/([A-Za-z0-9._/-]{1,256})$/;
const TOPIC = /^projects\/([a-z][a-z0-9-]{4,28}[a-z0-9])\/topics\/([A-Za-z][A-Za-z0-9._~+%-]{2,254})$/;

const bad = (detail: string) => new InvalidInput(detail);

function text(fields: Record<string, unknown>, name: string, type: string, rule: RegExp, what: string): string {
  const value = fields[name];
  if (typeof value !== 'string' || !rule.test(value)) throw bad(`destination.${name} must be ${what} (${type})`);
  return value;
}

function region(value: string, name: string): string {
  if (!AWS_REGIONS.has(value)) throw bad(`destination.${name} names a region that is not one of AWS's regions`);
  return value;
}

/** A service account key file: client_email, private_key (PKCS #8 PEM), token_uri Google's. */
function serviceAccountKey(value: unknown): string {
  const key = value as Record<string, unknown> | null;
  if (key === null || typeof key !== 'object' || Array.isArray(key))
    throw bad('destination.service_account_key must be the key file of a service account (a JSON object)');
  const { client_email, private_key, token_uri, private_key_id } = key;
  if (typeof client_email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(client_email))
    throw bad('destination.service_account_key must have a client_email');
  const pem =
    typeof private_key === 'string'
      ? /-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\s]+)-----END PRIVATE KEY-----/.exec(private_key)
      : null;
  if (pem === null || (pem[1] as string).replace(/\s/g, '').length % 4 !== 0)
    throw bad('destination.service_account_key must have a private_key (PEM, PKCS #8)');
  if (token_uri !== GOOGLE_TOKEN_URI)
    throw bad(`destination.service_account_key must have token_uri ${GOOGLE_TOKEN_URI}`);
  const kept: Record<string, string> = { client_email, private_key: private_key as string, token_uri };
  if (typeof private_key_id === 'string') kept.private_key_id = private_key_id;
  return JSON.stringify(kept);
}

/**
 * `destination` as given to POST or PATCH. Credentials may be left out only when `keepable`
 * (a PATCH: the stored ones are kept, if the type stays the same).
 */
export function parseDestination(value: unknown, keepable = false): GivenDestination {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw bad('destination must be an object with a type');
  const given = value as Record<string, unknown>;
  const type = given.type;
  if (typeof type !== 'string' || !(DESTINATION_TYPES as readonly string[]).includes(type))
    throw bad(`destination.type must be one of ${DESTINATION_TYPES.join(', ')}`);
  const fields: DestinationFields = { type: type as DestinationType };
  switch (type as DestinationType) {
    case 'http':
      return { fields, credentials: null };
    case 'cloudflare_queue':
      fields.account_id = text(given, 'account_id', type, HEX32, '32 lowercase hexadecimal digits');
      fields.queue_id = text(given, 'queue_id', type, HEX32, '32 lowercase hexadecimal digits');
      break;
    case 'aws_sqs': {
      const url = text(given, 'queue_url', type, SQS_URL, 'https://sqs.<region>.amazonaws.com/<account>/<queue>');
      region((SQS_URL.exec(url) as RegExpExecArray)[1] as string, 'queue_url');
      fields.queue_url = url;
      fields.access_key_id = text(given, 'access_key_id', type, ACCESS_KEY_ID, 'an AWS access key id');
      break;
    }
    case 'aws_eventbridge': {
      fields.region = region(text(given, 'region', type, /^[a-z0-9-]{1,32}$/, 'an AWS region'), 'region');
      const bus = given.event_bus;
      const arn = typeof bus === 'string' ? BUS_ARN.exec(bus) : null;
      if (arn !== null && arn[1] !== fields.region)
        throw bad('destination.event_bus must be a bus of the destination region');
      fields.event_bus =
        arn !== null ? (bus as string) : text(given, 'event_bus', type, BUS_NAME, 'an event bus name or ARN');
      fields.source = text(given, 'source', type, /^(?!aws\.)[\x21-\x7e]{1,256}$/, 'a source of 1 to 256 characters');
      fields.access_key_id = text(given, 'access_key_id', type, ACCESS_KEY_ID, 'an AWS access key id');
      break;
    }
    case 'gcp_pubsub':
      fields.topic = text(
        given,
        'topic',
        type,
        TOPIC,
        'projects/<project>/topics/<topic> (a project id of 6 to 30 lowercase letters, digits and hyphens, starting with a letter; a topic of 3 to 255 characters, starting with a letter)',
      );
      break;
  }
  const names = DESTINATION_FIELDS[type as DestinationType].credentials;
  const sent = names.filter((name) => given[name] !== undefined);
  if (sent.length === 0 && keepable) return { fields, credentials: null };
  const credentials: Record<string, string> = {};
  for (const name of names) {
    if (name === 'service_account_key') credentials[name] = serviceAccountKey(given[name]);
    else {
      const secret = given[name];
      if (typeof secret !== 'string' || secret.length > 1024 || !VISIBLE.test(secret))
        throw bad(`destination.${name} is required (${type})`);
      credentials[name] = secret;
    }
  }
  return { fields, credentials };
}

/**
 * The address that names a destination, stored in the webhook's `url` column for the types that
 * are not HTTP: two destinations are the same when their addresses are. Not a URL any release
 * requests: a release before destinations refuses it as a URL.
 */
export function destinationAddress(fields: DestinationFields): string {
  switch (fields.type) {
    case 'cloudflare_queue':
      return `cloudflare_queue:${fields.account_id}/${fields.queue_id}`;
    case 'aws_sqs':
      return `aws_sqs:${fields.queue_url}`;
    case 'aws_eventbridge':
      return `aws_eventbridge:${fields.region}/${fields.event_bus}`;
    case 'gcp_pubsub':
      return `gcp_pubsub:${fields.topic}`;
    default:
      throw new Error('an HTTP destination is addressed by its URL');
  }
}

/** The fields of a destination as its address (see destinationAddress) names them; null for an HTTP URL. */
export function addressedFields(url: string): DestinationFields | null {
  const colon = url.indexOf(':');
  const type = url.slice(0, colon);
  const address = url.slice(colon + 1);
  const slash = address.indexOf('/');
  switch (type) {
    case 'cloudflare_queue':
      return { type, account_id: address.slice(0, slash), queue_id: address.slice(slash + 1) };
    case 'aws_sqs':
      return { type, queue_url: address };
    case 'aws_eventbridge':
      return { type, region: address.slice(0, slash), event_bus: address.slice(slash + 1) };
    case 'gcp_pubsub':
      return { type, topic: address };
    default:
      return null;
  }
}

/**
 * The host a webhook is sent to, as a host's rate counts it (scheme, host and port), from its
 * stored `url`: its HTTP URL's; for the other types, that of the API's real address
 * (destinationUrl), whatever stand-in DESTINATION_API_BASES names. So two SQS queues of one
 * region are one host, an SQS queue and a Pub/Sub topic two, as with HTTP endpoints.
 */
export function hostOf(url: string): string {
  const fields = addressedFields(url);
  try {
    return new URL(fields === null ? url : destinationUrl(fields)).origin;
  } catch {
    return url;
  }
}

/** The region an SQS queue URL names. */
export const sqsRegion = (queueUrl: string) => (SQS_URL.exec(queueUrl) as RegExpExecArray)[1] as string;

/** The HTTPS address the service sends a destination's messages to, at the API's real host. */
export function destinationUrl(fields: DestinationFields): string {
  switch (fields.type) {
    case 'cloudflare_queue':
      return `https://api.cloudflare.com/client/v4/accounts/${fields.account_id}/queues/${fields.queue_id}/messages`;
    case 'aws_sqs':
      return fields.queue_url as string;
    case 'aws_eventbridge':
      return `https://events.${fields.region}.amazonaws.com/`;
    case 'gcp_pubsub':
      return `https://pubsub.googleapis.com/v1/${fields.topic}:publish`;
    default:
      throw new Error('an HTTP destination is sent to its URL');
  }
}

/** The origins API requests of each type go to, and Google's token endpoint (`gcp_oauth`). */
export type ApiBase = ApiDestinationType | 'gcp_oauth';
const API_BASES: readonly string[] = ['cloudflare_queue', 'aws_sqs', 'aws_eventbridge', 'gcp_pubsub', 'gcp_oauth'];

/**
 * DESTINATION_API_BASES: space-separated `type=origin` pairs (`http(s)://host[:port]`), the
 * operator's stand-ins for each type's API. Throws a message naming what is wrong.
 */
export function parseApiBases(value: unknown): ReadonlyMap<ApiBase, string> {
  const bases = new Map<ApiBase, string>();
  const setting = typeof value === 'string' ? value.trim() : '';
  for (const pair of setting === '' ? [] : setting.split(/\s+/)) {
    const eq = pair.indexOf('=');
    const type = pair.slice(0, eq);
    if (eq === -1 || !API_BASES.includes(type))
      throw new Error(`must be type=origin pairs (types ${API_BASES.join(', ')})`);
    let origin: string;
    try {
      const url = new URL(pair.slice(eq + 1));
      if (
        (url.protocol !== 'http:' && url.protocol !== 'https:') ||
        url.origin !== pair.slice(eq + 1).replace(/\/$/, '')
      )
        throw new Error();
      origin = url.origin;
    } catch {
      throw new Error(`${type}'s base must be an http(s)://host:port origin`);
    }
    bases.set(type as ApiBase, origin);
  }
  return bases;
}

/** `url` with its origin replaced by the operator's base for `type`, when one is set. */
export function rebased(url: string, type: ApiBase, bases: ReadonlyMap<ApiBase, string>): string {
  const base = bases.get(type);
  if (base === undefined) return url;
  const real = new URL(url);
  return `${base}${real.pathname}${real.search}`;
}
