// An application's archives in R2 (the HISTORY bucket): every object whose key starts with its
// encoded id and a slash.
import { chunks } from '../core/batches';
import { archivePrefix } from '../deliveries/archive';

/** The most keys R2 deletes in one call. */
const DELETE_AT_ONCE = 1000;

/** Deletes every archive object of the application, page by page; returns how many went. */
export async function deleteArchives(bucket: R2Bucket, appId: string): Promise<number> {
  let deleted = 0;
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix: archivePrefix(appId), cursor });
    for (const keys of chunks(
      page.objects.map((o) => o.key),
      DELETE_AT_ONCE,
    )) {
      await bucket.delete(keys);
      deleted += keys.length;
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor !== undefined);
  return deleted;
}
