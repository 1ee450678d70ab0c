import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { success } from '../http/envelope';
import { idParam, queryOf } from '../http/params';
import { sessionStart } from '../http/storage';
import { inObject } from '../platform/objects';
import { ownedEndpoint } from './owned';
import type { HourCounts } from './store/log';

const HOUR_MS = 3_600_000;

/** The start of the hour of `ms`, as the counters write it: `2026-11-24T14:00:00Z`. */
export const hourOf = (ms: number) =>
  `${new Date(Math.floor(ms / HOUR_MS) * HOUR_MS).toISOString().slice(0, 13)}:00:00Z`;

type Counts = Omit<HourCounts, 'hour'>;

/** The counts of `rows` together, in their documented field order. */
function total(rows: HourCounts[]): Counts {
  const sum: Counts = { succeeded: 0, failed: 0, pending: 0, cancelled: 0, attempts: 0, failed_attempts: 0 };
  for (const row of rows) for (const key of Object.keys(sum) as (keyof Counts)[]) sum[key] += row[key];
  return sum;
}

/**
 * The stats' `value` at `now`: the last 24 hours and the last 7 days (the current hour and the
 * 23, or 167, hours before it), and the 24 hours one by one, oldest first.
 */
export function statsJson(webhookId: string, rows: HourCounts[], now: number): string {
  const current = Math.floor(now / HOUR_MS) * HOUR_MS;
  const day = hourOf(current - 23 * HOUR_MS);
  const byHour = new Map(rows.map((r) => [r.hour, r]));
  const hourly = Array.from({ length: 24 }, (_, i) => {
    const hour = hourOf(current - (23 - i) * HOUR_MS);
    const r = byHour.get(hour);
    return {
      hour,
      succeeded: r?.succeeded ?? 0,
      failed: r?.failed ?? 0,
      attempts: r?.attempts ?? 0,
      failed_attempts: r?.failed_attempts ?? 0,
    };
  });
  const last24h = JSON.stringify(total(rows.filter((r) => r.hour >= day)));
  return `{"webhook_id":${webhookId},"last_24h":${last24h},"last_7d":${JSON.stringify(total(rows))},"hourly":${JSON.stringify(hourly)}}`;
}

/**
 * GET /v1.0/app/nft/webhook/stats?webhook_id=N: the webhook's deliveries of the last 24 hours and
 * 7 days by status, the attempts made in them (and how many failed), and the last 24 hours hour by hour.
 * One D1 read and one call to the endpoint's object, whatever the volume (hourly counters, not a
 * scan of the deliveries).
 */
export async function readStats(c: Context<AppEnv>): Promise<Response> {
  const webhookId = idParam(queryOf(c.req.url));
  c.set('webhookId', webhookId);
  const start = sessionStart(c.req.header('x-d1-bookmark'));
  const now = Date.now();
  const since = hourOf(now - 167 * HOUR_MS);
  const endpoint = await ownedEndpoint(c, webhookId, { start });
  const rows = await inObject(() => endpoint.stats(since));
  return success(c, { value: statsJson(webhookId, rows, now) });
}
