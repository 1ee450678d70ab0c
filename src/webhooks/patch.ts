import type { Context } from 'hono';
import { type GivenHeaders, parseHeaders } from '../core/custom-headers';
import { destinationAddress, type GivenDestination, parseDestination } from '../core/destinations';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { badInput, conflict, notFound, success } from '../http/envelope';
import {
  descriptionField,
  filterField,
  idField,
  MAX_WEBHOOK_BODY_BYTES,
  orderingField,
  rateLimitField,
} from '../http/params';
import { withD1 } from '../http/storage';
import { actorOf } from './actor';
import { eventTypes } from './create';
import { storedDestination, storedHeaders } from './destination';
import { tellApplication } from './notify';
import { webhookJson } from './representation';
import { secretKeys } from './secrets';
import { patchWebhook, type WebhookPatch } from './store/patch';
import { allowedOrigins, webhookUrl } from './url';

/**
 * PATCH's input: int64 `webhook_id`, and each of `url` (POST's rules), `event_types` (null: every
 * type), `rate_limit` (1 to 1,000 or null), `description` (at most 256 characters or null) and
 * `filter` (a filter object or null) and `ordering` ("fifo" or null) only when the body has it. Other fields are ignored.
 */
export function webhookPatch(
  body: unknown,
  allowed?: ReadonlySet<string>,
  bytes: Uint8Array = new Uint8Array(),
): { webhookId: string; patch: WebhookPatch; destination?: GivenDestination; headers?: GivenHeaders } {
  const fields = jsonObject(body);
  const webhookId = idField(fields.webhook_id);
  const patch: WebhookPatch = {};
  // Credentials left out keep the stored ones (the store refuses a new type without its own).
  const destination = Object.hasOwn(fields, 'destination') ? parseDestination(fields.destination, true) : undefined;
  const http = destination === undefined || destination.fields.type === 'http';
  if (Object.hasOwn(fields, 'url')) {
    if (!http) throw badInput(`url is not sent for a destination of type ${destination?.fields.type}`);
    if (typeof fields.url !== 'string') throw badInput('url must be a string');
    patch.url = webhookUrl(fields.url, allowed);
  }
  if (destination !== undefined && !http) patch.url = destinationAddress(destination.fields);
  const headers =
    Object.hasOwn(fields, 'headers') || Object.hasOwn(fields, 'sensitive_headers')
      ? parseHeaders(fields.headers, fields.sensitive_headers)
      : undefined;
  if (Object.hasOwn(fields, 'event_types')) patch.eventTypes = eventTypes(fields.event_types);
  if (Object.hasOwn(fields, 'rate_limit')) patch.rateLimit = rateLimitField(fields.rate_limit);
  if (Object.hasOwn(fields, 'description')) patch.description = descriptionField(fields.description);
  if (Object.hasOwn(fields, 'filter')) patch.filter = filterField(fields.filter, bytes);
  if (Object.hasOwn(fields, 'ordering')) patch.ordering = orderingField(fields.ordering);
  return { webhookId, patch, destination, headers };
}

/** What the store's refusals mean. */
const UNFIT = {
  credentials: 'destination: a new destination type needs its credentials',
  'url-not-http': 'url is not sent for a destination that is not http',
  'url-required': 'url is required to make the destination http',
} as const;

/**
 * PATCH: change the fields given and nothing else. 200 with the webhook as it stands; 409 when
 * another of the application's webhooks has the new URL; 404 when the application has no such webhook.
 */
export async function editWebhook(c: Context<AppEnv>): Promise<Response> {
  const allowed = allowedOrigins(c.env);
  const { bytes, value } = await readJsonBody(c.req.raw, { maxBytes: MAX_WEBHOOK_BODY_BYTES });
  const { webhookId, patch, destination, headers } = webhookPatch(value, allowed, bytes);
  c.set('webhookId', webhookId);
  if (destination !== undefined || headers !== undefined) {
    const keys = await secretKeys(c.env);
    if (destination !== undefined) patch.destination = await storedDestination(keys, destination);
    if (headers !== undefined) patch.headers = await storedHeaders(keys, headers);
  }
  const result = await withD1(c, 'first-primary', (db) => patchWebhook(db, webhookId, patch, actorOf(c)));
  if (result.outcome === 'missing') throw notFound();
  if (result.outcome === 'duplicate') throw conflict('url is already registered for this application');
  if (result.outcome === 'invalid') throw badInput(UNFIT[result.reason]);
  // Every event stored after this reply meets its event types and filter as they are now; a new
  // URL, rate or ordering: a pass under way sends its next attempts the new way.
  const sending =
    patch.url !== undefined ||
    patch.rateLimit !== undefined ||
    patch.ordering !== undefined ||
    patch.destination !== undefined ||
    patch.headers !== undefined;
  if (result.changed) await tellApplication(c, webhookId, { auditId: result.auditId, sending });
  return success(c, { value: webhookJson(result.webhook) });
}
