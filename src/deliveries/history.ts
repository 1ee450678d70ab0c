// An endpoint's whole history, hot and archived, read as one: the delivery log's pages (hot rows
// and slim rows merged by id, the archived ones' fields from their R2 objects), one delivery with
// its attempts, what a resend copies, and the archived failed deliveries a recovery brings back.
// An archived delivery reads exactly as it did hot: R2 holds its row as it was.
import { DELIVERY_CURSOR, type Page, pageOf } from '../core/pages';
import { compareByAge } from '../events/store/delivery-ids';
import type { ArchiveReader } from './archive';
import { type ArchivedDelivery, archivedFailed, archivedOne, archivedPage } from './store/archive';
import {
  type AttemptRow,
  type DeliveryPageQuery,
  type DeliveryRow,
  eventOf,
  getDelivery,
  listDeliveries,
} from './store/log';

/** An archived delivery as the log shows it. */
const rowOf = (d: ArchivedDelivery): DeliveryRow => ({
  delivery_id: d.delivery_id,
  message_id: d.message_id,
  type: d.type,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: d.next_attempt_at,
  last_attempt_at: d.last_attempt_at,
  last_status: d.last_status,
  last_error: d.last_error,
  created_at: d.created_at,
});

/** A keyset page of the endpoint's deliveries, hot and archived, newest first (see newestFirst). */
export async function historyPage(
  storage: DurableObjectStorage,
  reader: ArchiveReader,
  query: DeliveryPageQuery,
): Promise<Page<DeliveryRow>> {
  const wanted = query.limit + 1;
  // Each side's first `limit + 1`: the page's rows and whether another follows are among them.
  const hot = listDeliveries(storage.sql, { ...query, limit: wanted }).rows;
  const cold = archivedPage(storage.sql, { ...query, limit: wanted });
  const merged: ({ hot: DeliveryRow } | { cold: { delivery_id: string; key: string } })[] = [
    ...hot.map((row) => ({ hot: row })),
    ...cold.map((ref) => ({ cold: ref })),
  ];
  const idOf = (entry: (typeof merged)[number]) => ('hot' in entry ? entry.hot.delivery_id : entry.cold.delivery_id);
  merged.sort((a, b) => compareByAge(idOf(b), idOf(a)));
  const shown = merged.slice(0, wanted);
  const archived = await reader.deliveries(shown.flatMap((entry) => ('cold' in entry ? [entry.cold] : [])));
  const byId = new Map(archived.map((d) => [d.delivery_id, rowOf(d)]));
  const rows = shown.map((entry) => ('hot' in entry ? entry.hot : (byId.get(entry.cold.delivery_id) as DeliveryRow)));
  return pageOf(rows, query.limit, (row) => row.delivery_id, DELIVERY_CURSOR);
}

/** The archived delivery with this id of the application, whole, or null. */
async function archivedDelivery(
  storage: DurableObjectStorage,
  reader: ArchiveReader,
  deliveryId: string,
  appId: string,
): Promise<ArchivedDelivery | null> {
  const ref = archivedOne(storage.sql, deliveryId);
  if (ref === undefined) return null;
  const [d] = await reader.deliveries([ref]);
  return d !== undefined && d.app_id === appId ? d : null;
}

/** One delivery of the application, hot or archived, with every attempt oldest first; null when none such. */
export async function historyDelivery(
  storage: DurableObjectStorage,
  reader: ArchiveReader,
  deliveryId: string,
  appId: string,
): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] } | null> {
  const hot = getDelivery(storage.sql, deliveryId, appId);
  if (hot !== null) return hot;
  const d = await archivedDelivery(storage, reader, deliveryId, appId);
  // With its body, as one delivery's read shows it hot.
  return d === null
    ? null
    : { delivery: { ...rowOf(d), payload: d.payload, event_id: d.event_id }, attempts: d.attempt_log };
}

/** What a resend copies of a delivery, hot or archived: its event's type, body and message id. */
export async function historyEvent(
  storage: DurableObjectStorage,
  reader: ArchiveReader,
  deliveryId: string,
  appId: string,
): Promise<{ type: string; payload: string; message_id: string } | null> {
  const hot = eventOf(storage.sql, deliveryId, appId);
  if (hot !== null) return hot;
  const d = await archivedDelivery(storage, reader, deliveryId, appId);
  return d === null ? null : { type: d.type, payload: d.payload, message_id: d.message_id };
}

/**
 * The archived deliveries that failed, created in [since, until) (ms), read whole from R2, to be
 * made hot again (restoreDeliveries) by the caller in the same synchronous step as its recovery:
 * nothing (an archiving pass) can run between the two.
 */
export async function failedInArchive(
  storage: DurableObjectStorage,
  reader: ArchiveReader,
  since: number,
  until: number,
): Promise<ArchivedDelivery[]> {
  return reader.deliveries(archivedFailed(storage.sql, since, until));
}
