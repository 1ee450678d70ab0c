// What a Durable Object keeps for its application besides its tables: the application's retention
// as the platform set it (none: DELIVERY_RETENTION_DAYS), in the object's own key-value storage,
// which needs no schema step; and erasing everything the object holds.
import { type SchemaStep, upgradeSchema } from './object-schema';

const RETENTION_KEY = 'retention_days';

/** The application's retention as last told; undefined when the platform set none. */
export const retentionSet = (storage: DurableObjectStorage): number | undefined =>
  storage.kv.get<number>(RETENTION_KEY);

/** The days the object keeps what it holds: the application's retention as last told, else `fallback`. */
export const retentionOf = (storage: DurableObjectStorage, fallback: number): number =>
  retentionSet(storage) ?? fallback;

/** Keeps the application's retention (written only when it changes); returns whether it changed. */
export function keepRetention(storage: DurableObjectStorage, days: number): boolean {
  if (storage.kv.get<number>(RETENTION_KEY) === days) return false;
  storage.kv.put(RETENTION_KEY, days);
  return true;
}

/**
 * Deletes everything the object stores (its tables, its key-value pairs, its alarm), then makes
 * its tables again, empty, at its class's version, so that a later call finds them.
 */
export async function eraseStorage(storage: DurableObjectStorage, steps: readonly SchemaStep[]): Promise<void> {
  await storage.deleteAlarm();
  await storage.deleteAll();
  upgradeSchema(storage, steps);
}
