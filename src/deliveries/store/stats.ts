// A webhook's delivery counts, from the hourly counters that triggers on deliveries and
// delivery_attempts keep (delivery_stats): at most 168 rows whatever the volume. One round trip.
import type { Db } from '../../platform/d1';
import { OWNED } from '../../webhooks/store/rows';

/** One hour's counters: deliveries created in it by their status now, attempts made in it. */
export interface HourCounts {
  hour: string;
  pending: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  attempts: number;
}

/**
 * The application's webhook's counters of every hour from `since` (the start of an hour, as the
 * counters write it: `2026-11-24T14:00:00Z`) on; null when the application has no such webhook.
 */
export async function readHourCounts(
  db: Db,
  webhookId: string,
  appId: string,
  since: string,
): Promise<HourCounts[] | null> {
  const owned = `SELECT 1 FROM webhooks WHERE ${OWNED}`;
  const [found, hours] = await db.batch<Record<string, unknown>>([
    db.prepare(`SELECT EXISTS (${owned}) AS found`).bind(webhookId, appId),
    db
      .prepare(
        `SELECT hour, pending, succeeded, failed, cancelled, attempts FROM delivery_stats
         WHERE webhook_id = CAST(?1 AS INTEGER) AND hour >= ?3 AND EXISTS (${owned})
         ORDER BY hour`,
      )
      .bind(webhookId, appId, since),
  ]);
  if (found?.results[0]?.found !== 1) return null;
  return (hours?.results ?? []) as unknown as HourCounts[];
}
