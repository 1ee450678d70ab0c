// Hot and cold: deliveries that ended move from the endpoint object's tables to R2 (the bucket
// bound as HISTORY), many to one gzip-compressed object, written from the object's alarm; what
// stays is one slim row each (store/archive.ts). The format and the keys are in docs/storage.md,
// "The archive". A write to R2 that fails leaves the deliveries hot: the next alarm tries again.
import { log } from '../core/log';
import { type ArchivedDelivery, coldDeliveries, forgetObjects, markArchived, purgeArchived } from './store/archive';

/** Deliveries one R2 object holds at most (one archiving pass writes one object). */
export const ARCHIVE_BATCH = 500;
/** Payload and reply-body bytes past which a batch takes no more deliveries (events up to 64 KiB). */
const ARCHIVE_BATCH_BYTES = 4 * 1024 * 1024;
/** Archived objects an endpoint object keeps read in memory (a page reads few, contiguous by id). */
const CACHED_OBJECTS = 4;

/**
 * The prefix of every archive object of the application: its id (URI-encoded) and a slash. Its
 * archive is found, and erased, by it (the platform's operational endpoint's objects included).
 */
export const archivePrefix = (appId: string) => `${encodeURIComponent(appId)}/`;

/**
 * The R2 key of an object of the archive: its application's prefix, its webhook, then the first
 * and last delivery id it holds.
 */
export const archiveKey = (appId: string, webhookId: string, firstId: string, lastId: string) =>
  `${archivePrefix(appId)}${webhookId}/${firstId}-${lastId}.ndjson.gz`;

/** The object's body: one delivery a line (JSON), the lines gzip-compressed. */
async function compress(deliveries: ArchivedDelivery[]): Promise<ArrayBuffer> {
  const text = deliveries.map((d) => JSON.stringify(d)).join('\n');
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream('gzip'));
  return new Response(stream).arrayBuffer();
}

/**
 * One archiving pass: up to ARCHIVE_BATCH deliveries (and about ARCHIVE_BATCH_BYTES) that ended
 * and did not change since `before` (ISO), of one application, written to one R2 object, then
 * slim here. Returns how many moved, and whether the batch was full (more may wait); none moved
 * when none was due or the write failed (logged; they stay hot).
 */
export async function archivePass(
  storage: DurableObjectStorage,
  bucket: R2Bucket,
  webhookId: string,
  before: string,
): Promise<{ moved: number; full: boolean }> {
  const { deliveries: cold, more } = coldDeliveries(storage.sql, before, ARCHIVE_BATCH, ARCHIVE_BATCH_BYTES);
  const first = cold[0];
  if (first === undefined) return { moved: 0, full: false };
  // One application per object (a webhook has one; the key names it).
  const batch = cold.filter((d) => d.app_id === first.app_id).sort((a, b) => compareIds(a.delivery_id, b.delivery_id));
  const key = archiveKey(
    first.app_id,
    webhookId,
    (batch[0] as ArchivedDelivery).delivery_id,
    (batch[batch.length - 1] as ArchivedDelivery).delivery_id,
  );
  try {
    await bucket.put(key, await compress(batch), {
      httpMetadata: { contentType: 'application/x-ndjson', contentEncoding: 'gzip' },
    });
  } catch (err) {
    log('error', { msg: 'archive write failed; deliveries stay hot', webhook_id: webhookId, key, error: String(err) });
    return { moved: 0, full: false };
  }
  const moved = markArchived(storage, key, batch);
  log('info', { msg: 'deliveries archived', webhook_id: webhookId, key, deliveries: moved });
  return { moved, full: more || batch.length < cold.length };
}

/** Two decimal int64 ids compared as numbers. */
export const compareIds = (a: string, b: string) => {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Reads objects of the archive, keeping the last few read (they never change once written). */
export class ArchiveReader {
  private readonly cache = new Map<string, Map<string, ArchivedDelivery>>();

  constructor(private readonly bucket: R2Bucket) {}

  /** The deliveries of the object at `key`, by id; throws when R2 cannot read it. */
  async object(key: string): Promise<Map<string, ArchivedDelivery>> {
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const body = await this.bucket.get(key);
    if (body === null) throw new Error(`archive object ${key} is missing`);
    const text = await new Response(body.body.pipeThrough(new DecompressionStream('gzip'))).text();
    const deliveries = new Map<string, ArchivedDelivery>();
    for (const line of text.split('\n')) {
      const d = JSON.parse(line) as ArchivedDelivery;
      deliveries.set(d.delivery_id, d);
    }
    this.cache.set(key, deliveries);
    if (this.cache.size > CACHED_OBJECTS) this.cache.delete(this.cache.keys().next().value as string);
    return deliveries;
  }

  /** The archived deliveries named, whole, in the order given (each object read once). */
  async deliveries(refs: { delivery_id: string; key: string }[]): Promise<ArchivedDelivery[]> {
    const found: ArchivedDelivery[] = [];
    for (const ref of refs) {
      const d = (await this.object(ref.key)).get(ref.delivery_id);
      if (d === undefined) throw new Error(`archive object ${ref.key} lacks delivery ${ref.delivery_id}`);
      found.push(d);
    }
    return found;
  }
}

/**
 * The archive's retention: slim rows created before `before` (ms) go, and the R2 objects whose
 * deliveries all were, at most `limit` objects. An object R2 fails to delete stays, and is tried
 * again at the next retention. Returns how many slim rows and objects went.
 */
export async function purgeArchive(
  storage: DurableObjectStorage,
  bucket: R2Bucket,
  before: number,
  limit: number,
): Promise<{ rows: number; objects: number }> {
  const { rows, objects } = storage.transactionSync(() => purgeArchived(storage.sql, before, limit));
  if (objects.length === 0) return { rows, objects: 0 };
  try {
    await bucket.delete(objects.map((o) => o.key));
  } catch (err) {
    log('error', { msg: 'archive delete failed; retried at the next retention', error: String(err) });
    return { rows, objects: 0 };
  }
  forgetObjects(
    storage.sql,
    objects.map((o) => o.object_id),
  );
  return { rows, objects: objects.length };
}
