// Erasing an application, seen from its object: every endpoint it ever handed deliveries to is
// erased (its object's storage deleted), a few side by side, and what they held counted.
import { chunks } from '../core/batches';
import { endpointsHeld } from './store/endpoints';

/** What erasing an application's objects deleted. */
export interface ObjectsErased {
  events: number;
  deliveries: number;
  attempts: number;
  values: number;
}

/** Endpoints an erasure erases side by side. */
const ERASE_AT_ONCE = 50;

/** Erases every endpoint the application handed deliveries to; what they held. */
export async function eraseEndpoints(
  env: CloudflareBindings,
  sql: SqlStorage,
): Promise<{ deliveries: number; attempts: number }> {
  const erased = { deliveries: 0, attempts: 0 };
  for (const ids of chunks(endpointsHeld(sql), ERASE_AT_ONCE)) {
    for (const held of await Promise.all(ids.map((id) => env.ENDPOINTS.getByName(id).erase()))) {
      erased.deliveries += held.deliveries;
      erased.attempts += held.attempts;
    }
  }
  return erased;
}
