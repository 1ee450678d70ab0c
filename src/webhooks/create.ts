import type { Context } from 'hono';
import { type GivenHeaders, parseHeaders } from '../core/custom-headers';
import { destinationAddress, type GivenDestination, parseDestination } from '../core/destinations';
import { isEventType } from '../core/event-types';
import { wholeNumber } from '../core/settings';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { ApiFailure, badInput, conflict, success } from '../http/envelope';
import {
  descriptionField,
  filterField,
  MAX_WEBHOOK_BODY_BYTES,
  orderingField,
  parseIdempotencyKey,
  rateLimitField,
} from '../http/params';
import { withD1 } from '../http/storage';
import { actorOf } from './actor';
import { storedDestination, storedHeaders } from './destination';
import { tellApplication } from './notify';
import { createdWebhookJson } from './representation';
import { openSecret, sealedNewSecret, secretKeys } from './secrets';
import { createWebhook, type NewWebhook, type UncheckedUrl } from './store/registration';
import { allowedOrigins, webhookUrl } from './url';

/** Webhooks an application may have when WEBHOOKS_PER_APP is not set. */
export const DEFAULT_WEBHOOKS_PER_APP = 100;
const MAX_WEBHOOKS_PER_APP = 1_000_000;

/** WEBHOOKS_PER_APP: a whole number from 1 to 1,000,000; empty means the default. */
export const webhooksPerApp = (env: CloudflareBindings): number =>
  wholeNumber(env, 'WEBHOOKS_PER_APP', DEFAULT_WEBHOOKS_PER_APP, 1, MAX_WEBHOOKS_PER_APP);

/** Most event types one webhook may name. */
export const MAX_EVENT_TYPES = 50;

/** `event_types`: absent or null (every type), or 1 to 50 distinct types; as JSON text or null. */
export function eventTypes(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > MAX_EVENT_TYPES ||
    !value.every(isEventType) ||
    new Set(value).size !== value.length
  ) {
    throw badInput(`event_types must be null or 1 to ${MAX_EVENT_TYPES} distinct event types`);
  }
  return JSON.stringify(value);
}

/**
 * A registration's input: `url`, `is_enabled` (default true), `event_types`, `description`,
 * `rate_limit`, `filter` and `ordering` (each default null).
 */
export interface WebhookRegistration {
  url: string;
  enabled: boolean;
  eventTypes: string | null;
  description: string | null;
  rateLimit: number | null;
  /** The filter's JSON text as sent; null: none. */
  filter: string | null;
  /** 'fifo': one delivery at a time, in order; null: none. */
  ordering: 'fifo' | null;
  /** Where it delivers (HTTP unless given); `url` is then the destination's address. */
  destination: GivenDestination;
  headers: GivenHeaders;
}

/** POST's input. Unknown fields are ignored. `allowed`: origins exempt from the URL's scheme and host rules. */
export function webhookRegistration(
  body: unknown,
  allowed?: ReadonlySet<string>,
  bytes: Uint8Array = new Uint8Array(),
): WebhookRegistration {
  const {
    url,
    is_enabled: enabled = true,
    event_types,
    description = null,
    rate_limit = null,
    filter = null,
    ordering = null,
    destination: given = { type: 'http' },
    headers,
    sensitive_headers,
  } = jsonObject(body);
  const destination = parseDestination(given);
  const http = destination.fields.type === 'http';
  if (!http && url !== undefined)
    throw badInput(`url is not sent for a destination of type ${destination.fields.type}`);
  if (http && url === undefined) throw badInput('url is required');
  if (http && typeof url !== 'string') throw badInput('url must be a string');
  if (typeof enabled !== 'boolean') throw badInput('is_enabled must be true or false');
  return {
    url: http ? webhookUrl(url as string, allowed) : destinationAddress(destination.fields),
    destination,
    headers: parseHeaders(headers, sensitive_headers),
    enabled,
    eventTypes: eventTypes(event_types),
    description: descriptionField(description),
    rateLimit: rateLimitField(rate_limit),
    filter: filterField(filter, bytes),
    ordering: orderingField(ordering),
  };
}

/** What legacy URLs become: their normalised form, or themselves when they do not parse. */
function normalised(urls: UncheckedUrl[]): NonNullable<NewWebhook['normalise']> {
  return urls.map(({ id, url }) => {
    let to = url;
    try {
      to = new URL(url).href;
    } catch {
      // Kept as it is: compared as stored.
    }
    return { id, from: url, to };
  });
}

/** The Idempotency-Key header, when sent: 1 to 255 visible ASCII characters. */
function idempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const key = parseIdempotencyKey(header);
  if (key === null) throw badInput('Idempotency-Key must be 1 to 255 visible ASCII characters');
  return key;
}

/** "The same request" for an Idempotency-Key is the same body bytes: their SHA-256, in hex. */
async function bodyHash(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * POST: register a webhook. 201 with Location and the webhook as `value`; a repeat under the same
 * Idempotency-Key answers the first reply again; a duplicate URL or a full application is 409.
 */
export async function registerWebhook(c: Context<AppEnv>): Promise<Response> {
  const cap = webhooksPerApp(c.env);
  const allowed = allowedOrigins(c.env);
  const key = idempotencyKey(c.req.header('idempotency-key'));
  const { bytes, value } = await readJsonBody(c.req.raw, { maxBytes: MAX_WEBHOOK_BODY_BYTES });
  const registration = webhookRegistration(value, allowed, bytes);
  const idempotency = key === undefined ? undefined : { key, hash: await bodyHash(bytes) };
  // One id and one secret for this request's write, the same in every retry of its batch.
  const writeId = crypto.randomUUID();
  const { secret, sealed } = await sealedNewSecret(c.env);
  const keys = await secretKeys(c.env);
  const hook: NewWebhook = {
    ...registration,
    destination: await storedDestination(keys, registration.destination),
    headers: await storedHeaders(keys, registration.headers),
    cap,
    writeId,
    idempotency,
    sealedSecret: sealed,
  };
  let result = await withD1(c, 'first-primary', (db) => createWebhook(db, hook, actorOf(c)));
  if (result.outcome === 'unchecked') {
    // Once per application with URLs stored before URLs were normalised.
    hook.normalise = normalised(result.urls);
    result = await withD1(c, 'first-primary', (db) => createWebhook(db, hook, actorOf(c)));
  }
  // Made now: every event stored after this reply goes to it (by its types and filter).
  if (result.outcome === 'created') await tellApplication(c, result.webhook.id, { auditId: result.auditId });
  switch (result.outcome) {
    case 'created':
    case 'replayed': {
      const { webhook } = result;
      c.set('webhookId', webhook.id);
      // The route's own path (WEBHOOK_PATH): where the webhook is read.
      const headers: Record<string, string> = { location: `${c.req.path}?webhook_id=${webhook.id}` };
      let shown: string | null = secret;
      if (result.outcome === 'replayed') {
        headers['idempotent-replayed'] = 'true';
        shown = result.sealedSecret === null ? null : await openSecret(await secretKeys(c.env), result.sealedSecret);
      }
      return success(c, { status: 201, value: createdWebhookJson(webhook, shown), headers });
    }
    case 'unchecked':
      throw new Error('create: URLs to normalise after normalising them');
    case 'key-reused':
      throw new ApiFailure(422, 'Idempotency-Key was used with another request body');
    case 'duplicate':
      throw conflict(
        registration.destination.fields.type === 'http'
          ? 'url is already registered for this application'
          : 'this destination is already registered for this application',
      );
    case 'full':
      throw conflict('this application has the most webhooks allowed (WEBHOOKS_PER_APP)');
  }
}
