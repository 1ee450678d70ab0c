import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { badInput, success } from '../http/envelope';
import { idField } from '../http/params';
import { inObject } from '../platform/objects';
import { ownedEndpoint } from './owned';

// ISO 8601 date and time with a time zone: 2026-11-23T14:05:35Z, 2026-11-23T14:05:35.951+01:00.
const ISO_8601 = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.\d{1,9})?)?(?:Z|[+-](\d\d):?(\d\d))$/i;

/** An ISO 8601 date-time with a time zone, as milliseconds; 400 otherwise (2026-02-30 included). */
export function parseInstant(value: unknown, name: string): number {
  const m = typeof value === 'string' ? ISO_8601.exec(value) : null;
  const [year, month, day, hour, minute, second, zoneHours, zoneMinutes] = (m?.slice(1) ?? []).map((part) =>
    Number(part ?? 0),
  ) as [number, number, number, number, number, number, number, number];
  const real =
    m !== null &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day === new Date(Date.UTC(year, month - 1, day)).getUTCDate() &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59 &&
    zoneHours <= 23 &&
    zoneMinutes <= 59;
  const ms = real ? Date.parse(value as string) : Number.NaN;
  if (Number.isNaN(ms)) throw badInput(`${name} must be an ISO 8601 date and time with a time zone`);
  return ms;
}

/**
 * POST /v1.0/app/nft/webhook/recover {"webhook_id", "since", "until"?}: every `failed` delivery
 * of that webhook created in [since, until) is attempted again, on a fresh schedule. 202 with how
 * many. `since` within the application's retention and not in the future, `until` (default now) after it.
 */
export async function recover(c: Context<AppEnv>): Promise<Response> {
  const body = jsonObject((await readJsonBody(c.req.raw)).value);
  const webhookId = idField(body.webhook_id);
  const now = Date.now();
  if (body.since === undefined) throw badInput('since is required');
  const since = parseInstant(body.since, 'since');
  const until = body.until === undefined || body.until === null ? now : parseInstant(body.until, 'until');
  if (since > now) throw badInput('since must not be in the future');
  // What the application's objects keep: its retention, which the platform may have set (its
  // object knows it; asked before the webhook, so that input is refused before storage is read).
  const days = await inObject(() => c.env.APPLICATIONS.getByName(c.get('appId')).retentionDays());
  if (since < now - days * 86_400_000) {
    throw badInput(`since must be within the last ${days} days (the application's retention)`);
  }
  if (until <= since) throw badInput('until must be after since');
  c.set('webhookId', webhookId);
  const iso = (ms: number) => new Date(ms).toISOString();
  const endpoint = await ownedEndpoint(c, webhookId, { enabled: true });
  const count = await inObject(() => endpoint.recover(iso(since), iso(until), iso(now)));
  return success(c, { status: 202, value: `{"deliveries":${count}}` });
}
