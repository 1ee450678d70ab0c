// Delivery ids in the application object's database. A delivery id carries its endpoint: the
// application numbers each webhook it hands deliveries to (the endpoints table, one row per
// webhook, written once), and a delivery's id is 2^62 + (the event's sequence number << 14) + that
// number. So a delivery is found by its id alone, with no row per delivery here. An event's
// sequence number is its time (milliseconds since 2020) << 6 plus 6 random bits, and above the
// one before: ids are unique in the application (one sequence number per event, one endpoint
// number per webhook), grow with creation, differ between applications but by chance (as the ids
// before did), and lie above every id given before (ids below 2^53, which keep their index rows
// until the retention removes them). Ids travel as decimal text (int64, never a double).

const CARRIED = 1n << 62n;
const ENDPOINT_BITS = 14n;
const MAX_ENDPOINT = (1n << ENDPOINT_BITS) - 1n;
const MAX_SEQUENCE = (1n << (62n - ENDPOINT_BITS)) - 1n;
const SEQUENCE_RANDOM_BITS = 6n;
/** Sequence numbers reserved by one write of the `ids` row: a minute's, so one row written a minute at most. */
const SEQUENCE_BLOCK = 60_000n << SEQUENCE_RANDOM_BITS;

/** The id of the delivery of event `sequence` to endpoint number `endpoint`. */
export const carriedId = (sequence: bigint, endpoint: number) =>
  (CARRIED | (sequence << ENDPOINT_BITS) | BigInt(endpoint)).toString();

/** The endpoint number a delivery id carries, or null for an id given before ids carried it. */
export function carriedEndpoint(deliveryId: string): number | null {
  const id = BigInt(deliveryId);
  return id < CARRIED ? null : Number(id & MAX_ENDPOINT);
}

// Ids given before (and still given when an application has used up its endpoint numbers or its
// sequence): milliseconds since 2020 times 2^12, plus 12 random bits, above the last one given
// (the `ids` row 'delivery'), each with an index row in the deliveries table.
const EPOCH_MS = 1_577_836_800_000n;
const RANDOM_BITS = 12n;

/** The next id of the kind given before, after `last` (decimal text; null: none yet), at `now`. */
export function nextDeliveryId(last: string | null, now: number): string {
  const random = BigInt(crypto.getRandomValues(new Uint32Array(1))[0] as number) & ((1n << RANDOM_BITS) - 1n);
  const fresh = ((BigInt(now) - EPOCH_MS) << RANDOM_BITS) | random;
  const after = last === null ? 0n : BigInt(last) + 1n;
  return (fresh > after ? fresh : after).toString();
}

/**
 * The events' sequence numbers: `next` in memory, the reserved ceiling in the `ids` row 'sequence'
 * (read once per call, so a rolled back call leaves nothing behind); a new instance starts above
 * the ceiling, so a number is never given twice.
 */
export class Sequence {
  private next: bigint | null = null;

  /**
   * The numbers of one call: its `take` gives the next one at `now`, or null when the sequence is
   * used up. Call it, and its `take`, in the transaction that uses them.
   */
  begin(sql: SqlStorage): (now: number) => bigint | null {
    const [row] = sql.exec<{ last: string }>(`SELECT last FROM ids WHERE name = 'sequence'`).toArray();
    let reserved = row === undefined ? 0n : BigInt(row.last);
    return (now) => {
      const random = BigInt(crypto.getRandomValues(new Uint8Array(1))[0] as number) & 63n;
      const fresh = ((BigInt(now) - EPOCH_MS) << SEQUENCE_RANDOM_BITS) | random;
      const after = this.next ?? reserved + 1n;
      const n = fresh > after ? fresh : after;
      if (n > MAX_SEQUENCE) return null;
      if (n > reserved) {
        reserved = n + SEQUENCE_BLOCK;
        sql.exec(
          `INSERT INTO ids (name, last) VALUES ('sequence', ?1) ON CONFLICT (name) DO UPDATE SET last = excluded.last`,
          reserved.toString(),
        );
      }
      this.next = n + 1n;
      return n;
    };
  }
}

/**
 * The webhook's endpoint number, given now (in the caller's transaction) when it has none; null
 * when the application has given them all. Noting it also notes that the endpoint holds
 * deliveries (store/endpoints.ts).
 */
export function endpointNumber(sql: SqlStorage, webhookId: string): number | null {
  const [row] = sql.exec<{ n: number | null }>('SELECT n FROM endpoints WHERE webhook_id = ?1', webhookId).toArray();
  if (row?.n != null) return row.n;
  const next = sql.exec<{ n: number }>('SELECT COALESCE(MAX(n), 0) + 1 AS n FROM endpoints').one().n;
  if (BigInt(next) > MAX_ENDPOINT) return null;
  sql.exec(
    'INSERT INTO endpoints (webhook_id, n) VALUES (?1, ?2) ON CONFLICT (webhook_id) DO UPDATE SET n = excluded.n',
    webhookId,
    next,
  );
  return next;
}

/** Which webhook's endpoint holds the delivery, or null when the application has none such. */
export function webhookOf(sql: SqlStorage, deliveryId: string): string | null {
  const endpoint = carriedEndpoint(deliveryId);
  const [row] =
    endpoint === null
      ? sql
          .exec<{ webhook_id: string }>(
            'SELECT webhook_id FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER)',
            deliveryId,
          )
          .toArray()
      : sql.exec<{ webhook_id: string }>('SELECT webhook_id FROM endpoints WHERE n = ?1', endpoint).toArray();
  return row?.webhook_id ?? null;
}
