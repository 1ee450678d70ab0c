// Delivery ids in the application object's database. A delivery id carries its endpoint: the
// application numbers each webhook it hands deliveries to (the endpoints table, one row per
// webhook, written once), and a delivery's id is 2^52 + (the event's sequence number << 14) + that
// number: at most 2^53 - 1, so it reads exactly as a JSON number in every client (plain
// `JSON.parse` included). So a delivery is found by its id alone, with no row per delivery here.
// An event's sequence number is a counter of the application's events (38 bits: 274 billion
// events), which the event's id carries too (eventIdOf), so an event's deliveries are found from
// its id (store/journeys.ts). Ids are unique in the application and grow with creation.
//
// Three kinds of id live side by side, by the release that gave them (their "eras"):
// - indexed: below 2^52, milliseconds since 2020 << 12 plus 12 random bits, each with an index row
//   in the deliveries table (the first releases; still given when an application has used up its
//   endpoint numbers, and by the platform's operational endpoint);
// - wide: 2^62 + (a time-based sequence number << 14) + the endpoint's number, given by the release
//   before this one (above 2^53: exact only to clients that keep digits), still read everywhere;
// - carried: this release's, above.
// Each era is younger than the one before, so "newest first" reads the carried ids, then every
// other id by its value (the wide ones above the indexed ones: eraRanges).

const CARRIED = 1n << 52n;
const CARRIED_END = 1n << 53n;
const WIDE = 1n << 62n;
const ENDPOINT_BITS = 14n;
const MAX_ENDPOINT = (1n << ENDPOINT_BITS) - 1n;
const MAX_SEQUENCE = (1n << (52n - ENDPOINT_BITS)) - 1n;
/** Sequence numbers reserved by one write of the `ids` row 'counter', so one row is written per that many events. */
const SEQUENCE_BLOCK = 4096n;
/** Hex digits of the sequence number at the start of an event id (38 bits fit in 10). */
const SEQUENCE_DIGITS = 10;

/** The id of the delivery of event `sequence` to endpoint number `endpoint`. */
export const carriedId = (sequence: bigint, endpoint: number) =>
  (CARRIED | (sequence << ENDPOINT_BITS) | BigInt(endpoint)).toString();

/** The endpoint number a delivery id carries, or null for an indexed id (one with an index row). */
export function carriedEndpoint(deliveryId: string): number | null {
  const id = BigInt(deliveryId);
  return id >= WIDE || (id >= CARRIED && id < CARRIED_END) ? Number(id & MAX_ENDPOINT) : null;
}

/**
 * The ranges of ids, [from, to) as decimal text, that a page of deliveries newest first reads in
 * turn, cut at `before` (the cursor's id, excluded) when given: the carried ids, then every id
 * above them (the wide ones, and any an operator inserted above 2^53), then the indexed ones.
 */
export function eraRanges(before?: string): [from: string, to: string][] {
  const eras: [bigint, bigint][] = [
    [CARRIED, CARRIED_END],
    [CARRIED_END, (1n << 63n) - 1n],
    [0n, CARRIED],
  ];
  if (before === undefined) return eras.map(([from, to]) => [from.toString(), to.toString()]);
  const cut = BigInt(before);
  const at = eras.findIndex(([from, to]) => cut >= from && cut < to);
  if (at === -1) return [];
  return eras.slice(at).map(([from, to], i) => [from.toString(), (i === 0 ? cut : to).toString()]);
}

/**
 * Up to `limit` rows newest first: `read(from, to, limit)` reads one era's range [from, to)
 * newest first (by id), the eras in turn from the one `before` falls in.
 */
export function newestFirst<T>(
  before: string | undefined,
  limit: number,
  read: (from: string, to: string, limit: number) => T[],
): T[] {
  const rows: T[] = [];
  for (const [from, to] of eraRanges(before)) {
    if (rows.length >= limit) break;
    rows.push(...read(from, to, limit - rows.length));
  }
  return rows;
}

/** Compares two delivery ids by age (negative: `a` is older), era first, then id. */
export function compareByAge(a: string, b: string): number {
  const era = (id: bigint) => (id >= CARRIED && id < CARRIED_END ? 1 : 0);
  const x = BigInt(a);
  const y = BigInt(b);
  return era(x) - era(y) || (x < y ? -1 : x > y ? 1 : 0);
}

/**
 * An event id that carries its sequence number: `evt_`, the number in 10 hex digits, then the
 * rest of the random id the event was given (`evt_` and 32 hex digits, as before).
 */
export const eventIdOf = (sequence: bigint, givenId: string) =>
  `evt_${sequence.toString(16).padStart(SEQUENCE_DIGITS, '0')}${givenId.slice(4 + SEQUENCE_DIGITS)}`;

/** The sequence number an event id may carry (any id of its form does; its deliveries confirm it), or null. */
export function sequenceOf(eventId: string): bigint | null {
  if (!/^evt_[0-9a-f]{32}$/.test(eventId)) return null;
  const n = BigInt(`0x${eventId.slice(4, 4 + SEQUENCE_DIGITS)}`);
  return n >= 1n && n <= MAX_SEQUENCE ? n : null;
}

// Indexed ids (given when an application has used up its endpoint numbers or its sequence, and by
// the operational endpoint): milliseconds since 2020 times 2^12, plus 12 random bits, above the
// last one given (the `ids` row 'delivery'), each with an index row in the deliveries table.
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
 * The events' sequence numbers, a counter: `next` in memory, the reserved ceiling in the `ids` row
 * 'counter' (read once per call, so a rolled back call leaves nothing behind); a new instance
 * starts above the ceiling, so a number is never given twice. (The row 'sequence' is the release
 * before's, whose numbers were times: left as it is.)
 */
export class Sequence {
  private next: bigint | null = null;

  /**
   * The numbers of one call: its `take` gives the next one, or null when the sequence is used up.
   * Call it, and its `take`, in the transaction that uses them.
   */
  begin(sql: SqlStorage): () => bigint | null {
    const [row] = sql.exec<{ last: string }>(`SELECT last FROM ids WHERE name = 'counter'`).toArray();
    let reserved = row === undefined ? 0n : BigInt(row.last);
    return () => {
      const n = this.next ?? reserved + 1n;
      if (n > MAX_SEQUENCE) return null;
      if (n > reserved) {
        reserved = n + SEQUENCE_BLOCK - 1n;
        sql.exec(
          `INSERT INTO ids (name, last) VALUES ('counter', ?1) ON CONFLICT (name) DO UPDATE SET last = excluded.last`,
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
