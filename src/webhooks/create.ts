import type { Context } from 'hono';
import { jsonObject, readJsonBody } from '../http/body';
import { ApiFailure, badInput, ConfigError, conflict, success } from '../http/envelope';
import type { AppEnv } from '../types';
import { actorOf } from './actor';
import { withD1 } from './d1';
import { parseIdempotencyKey } from './params';
import { webhookJson } from './representation';
import { createWebhook } from './store';
import { webhookUrl } from './url';

/** Webhooks an application may have when WEBHOOKS_PER_APP is not set. */
export const DEFAULT_WEBHOOKS_PER_APP = 100;
const MAX_WEBHOOKS_PER_APP = 1_000_000;

/** WEBHOOKS_PER_APP: a whole number from 1 to 1,000,000; empty means the default. */
export function webhooksPerApp(env: CloudflareBindings): number {
  const value = typeof env.WEBHOOKS_PER_APP === 'string' ? env.WEBHOOKS_PER_APP.trim() : '';
  if (value === '') return DEFAULT_WEBHOOKS_PER_APP;
  const n = /^\d{1,7}$/.test(value) ? Number(value) : 0;
  if (n < 1 || n > MAX_WEBHOOKS_PER_APP) {
    throw new ConfigError('WEBHOOKS_PER_APP', `must be a whole number from 1 to ${MAX_WEBHOOKS_PER_APP}`);
  }
  return n;
}

/** POST's input (CONTRACT §9): `url`, and `is_enabled` (default true). Unknown fields are ignored. */
export function webhookRegistration(body: unknown): { url: string; enabled: boolean } {
  const { url, is_enabled: enabled = true } = jsonObject(body);
  if (url === undefined) throw badInput('url is required');
  if (typeof url !== 'string') throw badInput('url must be a string');
  if (typeof enabled !== 'boolean') throw badInput('is_enabled must be true or false');
  return { url: webhookUrl(url), enabled };
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
  const key = idempotencyKey(c.req.header('idempotency-key'));
  const { bytes, value } = await readJsonBody(c.req.raw);
  const { url, enabled } = webhookRegistration(value);
  const idempotency = key === undefined ? undefined : { key, hash: await bodyHash(bytes) };
  // One id for this request's write, the same in every retry of its batch.
  const writeId = crypto.randomUUID();
  const result = await withD1(c, 'first-primary', (db) =>
    createWebhook(db, { url, enabled, cap, writeId, idempotency }, actorOf(c)),
  );
  switch (result.outcome) {
    case 'created':
    case 'replayed': {
      const { webhook } = result;
      c.set('webhookId', webhook.id);
      // The route's own path (WEBHOOK_PATH): where the webhook is read.
      const headers: Record<string, string> = { location: `${c.req.path}?webhook_id=${webhook.id}` };
      if (result.outcome === 'replayed') headers['idempotent-replayed'] = 'true';
      return success(c, { status: 201, value: webhookJson(webhook), headers });
    }
    case 'key-reused':
      throw new ApiFailure(422, 'Idempotency-Key was used with another request body');
    case 'duplicate':
      throw conflict('url is already registered for this application');
    case 'full':
      throw conflict('this application has the most webhooks allowed (WEBHOOKS_PER_APP)');
  }
}
