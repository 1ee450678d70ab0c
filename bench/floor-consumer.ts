// The floor of delivering (the deliveries queue's consumer), for `npm run bench`: written by hand
// and importing nothing from src/. Per queue batch: one D1 read (the batch's pending deliveries
// joined with their events and webhooks), every attempt at once (the same POST as the service:
// the stored payload, content-type and the three webhook-* headers, signed with HMAC-SHA256 by
// crypto.subtle, redirects not followed, a timeout), and one D1 write (a batch: the attempts,
// and each delivery's new state). No retry schedule beyond one fixed delay, no webhook health,
// no auto-disable, no log line. Signing secrets are stored sealed (AES-256-GCM under
// WEBHOOK_SECRET_KEY, `v1.` + base64 of IV and ciphertext): each is opened once per isolate.
//
// At most six attempts are open at once: Cloudflare allows an invocation six simultaneous open
// connections and queues the rest, but local workerd does not (ten fetches from one invocation
// were measured open at once), so a floor that opened all ten would get a concurrency production
// never gives. FLOOR_OPEN_AT_ONCE empty (the bench's --uncapped-floor) lifts the cap, to show it.

export interface ConsumerEnv {
  DB: D1Database;
  WEBHOOK_SECRET_KEY: string;
  FLOOR_OPEN_AT_ONCE?: string;
}

interface Row {
  id: string;
  attempts: number;
  event_id: string;
  payload: string;
  url: string;
  secret: string;
}

const encoder = new TextEncoder();
const bytesOf = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
const base64Of = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

let aes: Promise<CryptoKey> | undefined;
const hmacKeys = new Map<string, Promise<CryptoKey>>();

function hmacKey(env: ConsumerEnv, sealed: string): Promise<CryptoKey> {
  let key = hmacKeys.get(sealed);
  if (key === undefined) {
    aes ??= crypto.subtle.importKey('raw', bytesOf(env.WEBHOOK_SECRET_KEY), 'AES-GCM', false, ['decrypt']);
    key = (async () => {
      const bytes = bytesOf(sealed.slice(3));
      const plain = await crypto.subtle.decrypt(
        { name: 'AES-GCM', iv: bytes.subarray(0, 12) },
        await (aes as Promise<CryptoKey>),
        bytes.subarray(12),
      );
      const secret = new TextDecoder().decode(plain).slice('whsec_'.length);
      return crypto.subtle.importKey('raw', bytesOf(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    })();
    hmacKeys.set(sealed, key);
  }
  return key;
}

/** Runs `task`s with at most `limit` of them running at once, as the platform queues connections. */
function limiter(limit: number) {
  let open = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (open < limit) open++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next === undefined) open--;
      else next();
    }
  };
}

export async function deliver(batch: MessageBatch<{ delivery_id: string }>, env: ConsumerEnv): Promise<void> {
  const { results } = await env.DB.prepare(
    `SELECT CAST(d.delivery_id AS TEXT) AS id, d.attempts, e.event_id, e.payload, w.url, w.secret
       FROM deliveries AS d
       JOIN events AS e ON e.event_id = d.event_id
       JOIN webhooks AS w ON w.webhook_id = d.webhook_id
       WHERE d.delivery_id IN (SELECT value FROM json_each(?1)) AND d.status = 'pending'`,
  )
    .bind(JSON.stringify(batch.messages.map((m) => Number(m.body.delivery_id))))
    .all<Row>();

  const open = limiter(env.FLOOR_OPEN_AT_ONCE ? Number(env.FLOOR_OPEN_AT_ONCE) : Number.POSITIVE_INFINITY);
  const attempts = await Promise.all(
    results.map(async (row) => {
      const at = Date.now();
      const timestamp = Math.floor(at / 1000);
      const key = await hmacKey(env, row.secret);
      const signed = await crypto.subtle.sign(
        'HMAC',
        key,
        encoder.encode(`${row.event_id}.${timestamp}.${row.payload}`),
      );
      let status: number | null = null;
      let body: string | null = null;
      try {
        [status, body] = await open(async () => {
          const res = await fetch(row.url, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'webhook-id': row.event_id,
              'webhook-timestamp': String(timestamp),
              'webhook-signature': `v1,${base64Of(new Uint8Array(signed))}`,
            },
            body: row.payload,
            redirect: 'manual',
            signal: AbortSignal.timeout(15_000),
          });
          return [res.status, (await res.text()).slice(0, 1024)] as const;
        });
      } catch {
        // No reply: recorded as a connection error.
      }
      const ok = status !== null && status >= 200 && status < 300;
      return {
        id: row.id,
        attempt: row.attempts + 1,
        at: new Date(at).toISOString(),
        status,
        error: status === null ? 'connection' : null,
        duration_ms: Date.now() - at,
        body,
        state: ok ? 'succeeded' : 'pending',
        next: ok ? null : new Date(at + 5000).toISOString(),
      };
    }),
  );
  if (attempts.length === 0) return;
  const records = JSON.stringify(attempts);
  await env.DB.batch([
    env.DB.prepare(
      `INSERT OR IGNORE INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
         SELECT CAST(value ->> 'id' AS INTEGER), value ->> 'attempt', value ->> 'at', value ->> 'status', value ->> 'error',
           value ->> 'duration_ms', value ->> 'body'
         FROM json_each(?1)`,
    ).bind(records),
    env.DB.prepare(
      `UPDATE deliveries SET status = a.state, attempts = a.attempt, next_attempt_at = a.next,
           last_attempt_at = a.at, last_status = a.status, last_error = a.error
         FROM (SELECT CAST(value ->> 'id' AS INTEGER) AS id, value ->> 'state' AS state, value ->> 'attempt' AS attempt,
                 value ->> 'next' AS next, value ->> 'at' AS at, value ->> 'status' AS status,
                 value ->> 'error' AS error
               FROM json_each(?1)) AS a
         WHERE deliveries.delivery_id = a.id AND deliveries.status = 'pending'`,
    ).bind(records),
  ]);
  // Deliveries that failed are tried again later; the rest of the batch is acknowledged.
  const retry = new Set(attempts.filter((a) => a.state === 'pending').map((a) => a.id));
  for (const message of batch.messages) {
    if (retry.has(message.body.delivery_id)) message.retry({ delaySeconds: 5 });
    else message.ack();
  }
}
