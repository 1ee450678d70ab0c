// Bytes per archived delivery, for `npm run bench`: one endpoint's object of the service's bundle,
// with the archive's R2 bucket (HISTORY, Miniflare's) and HISTORY_HOT_SECONDS = 1, is given
// deliveries that ended (seeded through the tool, each with a NEW_NFT payload of about 400 bytes
// whose owner and transaction hash are random hex, and one attempt with a short body), round
// after round, and its alarm archives them. The object's size is ctx.storage.sql.databaseSize
// (what Cloudflare bills and caps at 10 GB). Rounds, not one batch: the pages the hot rows leave
// are reused by the next round's, as in a running object, so the growth from the first round's
// end to the last's is what the archive keeps per delivery. R2's share is the bucket's bytes per
// delivery.
import { createHash } from 'node:crypto';
import { startWorker } from './harness.mjs';
import { nftData } from './scenarios.mjs';

export const ARCHIVE = 'bytes per archived delivery';
const ROUNDS = 10;
const WEBHOOK = '901';
const APP = 'archive';

/** The entry that gives the service's Endpoint what the measurement asks of it (beside the tool's seed). */
const MEASURING = {
  size: 'size() { return this.ctx.storage.sql.databaseSize; }',
  archived: `archived() { return this.ctx.storage.sql.exec('SELECT COUNT(*) AS n FROM archived').one().n; }`,
  ring: 'ring() { return this.alarm(); }',
};

/** `count` deliveries that ended an hour ago, ids from `first`, and their attempts. */
function deliveries(first, count) {
  const at = new Date(Date.now() - 3_600_000).toISOString();
  const rows = [];
  const attempts = [];
  for (let i = 0; i < count; i++) {
    const id = String(first + BigInt(i));
    // Addresses and hashes as random as real ones (they are most of what compression cannot shrink).
    const hash = createHash('sha256').update(id).digest('hex');
    const owner = createHash('sha256').update(`owner ${id}`).digest('hex').slice(0, 40);
    const data = { ...nftData(i), owner: `0x${owner}`, tx_hash: `0x${hash}` };
    const payload = `{"type":"NEW_NFT","timestamp":"${at}","data":${JSON.stringify(data)}}`;
    rows.push({
      delivery_id: id,
      event_id: `evt_${id.padStart(32, '0')}`,
      message_id: `evt_${id.padStart(32, '0')}`,
      app_id: APP,
      type: i % 4 === 0 ? 'MOD_NFT' : 'NEW_NFT',
      payload,
      status: i % 50 === 0 ? 'failed' : 'succeeded',
      attempts: 1,
      schedule_start: 0,
      recovery_id: null,
      next_attempt_at: null,
      last_attempt_at: at,
      last_status: i % 50 === 0 ? 500 : 200,
      last_error: i % 50 === 0 ? 'HTTP 500' : null,
      created_at: at,
    });
    attempts.push({
      delivery_id: id,
      attempt: 1,
      attempted_at: at,
      status: i % 50 === 0 ? 500 : 200,
      error: i % 50 === 0 ? 'HTTP 500' : null,
      duration_ms: 40 + (i % 200),
      body: i % 50 === 0 ? 'internal error' : 'ok',
    });
  }
  return { rows, attempts };
}

/**
 * Archives `perRound` deliveries a round for ROUNDS rounds; returns the object's bytes per
 * archived delivery (after the first round), R2's bytes per delivery, and the sizes.
 */
export async function measureArchive({ bundleUrl, perRound, log }) {
  const worker = await startWorker({
    scriptPath: bundleUrl,
    tool: true,
    apps: 0,
    perApp: 0,
    durableObjects: {
      ENDPOINTS: { className: 'Endpoint', useSQLite: true },
      APPLICATIONS: { className: 'Application', useSQLite: true },
    },
    bindings: { HISTORY_HOT_SECONDS: '1' },
    r2Buckets: ['HISTORY'],
    endpointMethods: Object.values(MEASURING),
  });
  try {
    const call = (method) => worker.tool('/call', { webhookId: WEBHOOK, method });
    let next = 9_007_199_254_740_993n;
    const sizes = [];
    for (let round = 0; round < ROUNDS; round++) {
      const { rows, attempts } = deliveries(next, perRound);
      next += BigInt(perRound);
      for (let i = 0; i < rows.length; i += 500) {
        await worker.tool('/seed', {
          webhookId: WEBHOOK,
          deliveries: rows.slice(i, i + 500),
          attempts: attempts.slice(i, i + 500),
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 1100));
      while ((await call('archived')) < (round + 1) * perRound) await call('ring');
      sizes.push(await call('size'));
      log(`${ARCHIVE}: round ${round + 1}/${ROUNDS}, ${(round + 1) * perRound} archived, object ${sizes.at(-1)} B`);
    }
    const bucket = await worker.mf.getR2Bucket('HISTORY');
    let r2Bytes = 0;
    let objects = 0;
    let cursor;
    do {
      const page = await bucket.list({ cursor });
      for (const o of page.objects) r2Bytes += o.size;
      objects += page.objects.length;
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor !== undefined);
    const archived = (ROUNDS - 1) * perRound;
    return {
      deliveries: ROUNDS * perRound,
      rounds: ROUNDS,
      object_bytes_after_first_round: sizes[0],
      object_bytes_at_end: sizes.at(-1),
      object_bytes_per_archived_delivery: (sizes.at(-1) - sizes[0]) / archived,
      r2_objects: objects,
      r2_bytes: r2Bytes,
      r2_bytes_per_delivery: r2Bytes / (ROUNDS * perRound),
      payload_bytes: deliveries(0n, 1).rows[0].payload.length,
    };
  } finally {
    await worker.dispose();
  }
}
