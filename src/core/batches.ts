/** Rows handled per statement, and statements per Cron run at most. */
export const PURGE_BATCH = 1000;
const PURGE_MAX_BATCHES = 100;

/**
 * Runs `step` (which handles at most `batch` rows and says how many it did) until one does
 * fewer, at most `maxBatches` times: bounded work per Cron run. Returns the total.
 */
export async function inBatches(
  step: (batch: number) => Promise<number>,
  batch = PURGE_BATCH,
  maxBatches = PURGE_MAX_BATCHES,
): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const n = await step(batch);
    total += n;
    if (n < batch) break;
  }
  return total;
}

/** `items` grouped by `key`, each group in the order of `items`, the groups in order of first appearance. */
export function groupBy<T>(items: Iterable<T>, key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [item]);
    else group.push(item);
  }
  return groups;
}

/** `items` in consecutive slices of at most `size`. */
export function chunks<T>(items: T[], size: number): T[][] {
  const slices: T[][] = [];
  for (let i = 0; i < items.length; i += size) slices.push(items.slice(i, i + size));
  return slices;
}
