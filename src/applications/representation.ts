// The one place an application's settings become JSON.
import type { ApplicationRow } from './store/applications';

/**
 * An application as GET and PUT answer it: its retention (`default`: DELIVERY_RETENTION_DAYS, the
 * platform set none), whether it was erased, and when an erasure was asked for and finished, with
 * the counts of what erasures deleted.
 */
export function applicationJson(appId: string, row: ApplicationRow | null, defaultDays: number): string {
  const value: Record<string, unknown> = {
    app_id: appId,
    retention_days: row?.retention_days ?? defaultDays,
    default: row?.retention_days == null,
    erased: row?.erased_at != null,
  };
  if (row?.erasure_requested_at != null) value.erasure_requested_at = row.erasure_requested_at;
  if (row?.erased_at != null) value.erased_at = row.erased_at;
  if (row?.erased != null) value.counts = JSON.parse(row.erased);
  return JSON.stringify(value);
}
