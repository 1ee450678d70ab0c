// The floor of publishing and delivering on SQLite-backed Durable Objects, for `npm run bench`:
// written by hand and importing nothing from src/ (a floor built from our own store would hide what
// our statements waste). Same engine as the service, the fewest statements:
//
//   Worker    one D1 read (the applications' enabled webhooks, their event_types), then one RPC
//             per application to its FloorApplication; 202 with the event ids.
//   FloorApplication.publish   one transaction: per event an INSERT OR IGNORE (id, source key;
//             a repeated source key answers the earlier event's id), per delivery one index row;
//             then one RPC per webhook to its FloorEndpoint (awaited, as the service awaits its
//             handover), before answering.
//   FloorEndpoint.enqueue      one transaction inserting the deliveries with their payload; the
//             alarm set if none is.
//   FloorEndpoint.alarm        passes of up to 50 due rows: one D1 read of the webhook (URL, sealed
//             secret), the AES-opened HMAC key kept per isolate, every attempt signed (Standard
//             Webhooks) and sent six at once, then one transaction recording the attempts and the
//             deliveries' states. No outbox, rate limit, retry schedule, health, log line.
import { DurableObject } from 'cloudflare:workers';

export interface ObjectsEnv {
  DB: D1Database;
  WEBHOOK_SECRET_KEY: string;
  FLOOR_APPLICATIONS: DurableObjectNamespace<FloorApplication>;
  FLOOR_ENDPOINTS: DurableObjectNamespace<FloorEndpoint>;
}

interface Published {
  app_id: string;
  type: string;
  id?: string;
  data: unknown;
}

interface ToStore {
  eventId: string;
  sourceKey: string | null;
  appId: string;
  type: string;
  payload: string;
  createdAt: string;
}

export interface FloorDelivery {
  delivery_id: string;
  event_id: string;
  app_id: string;
  type: string;
  payload: string;
  created_at: string;
}

/** POST /v1.0/platform/nft/event and /events: the floor Worker's part. */
export async function publishToObjects(request: Request, env: ObjectsEnv, batch: boolean): Promise<Response> {
  const body = (await request.json()) as Published | { events: Published[] };
  const published = batch ? (body as { events: Published[] }).events : [body as Published];
  const createdAt = new Date().toISOString();
  const events: ToStore[] = published.map((e) => {
    const eventId = `evt_${crypto.randomUUID().replaceAll('-', '')}`;
    return {
      eventId,
      sourceKey: e.id === undefined ? null : `id:${e.id}`,
      appId: e.app_id,
      type: e.type,
      payload: `{"id":"${eventId}","type":${JSON.stringify(e.type)},"timestamp":"${createdAt}","data":${JSON.stringify(e.data)}}`,
      createdAt,
    };
  });
  const apps = [...new Set(events.map((e) => e.appId))];
  const { results } = await env.DB.prepare(
    `SELECT CAST(webhook_id AS TEXT) AS id, app_id, event_types FROM webhooks
     WHERE app_id IN (SELECT value FROM json_each(?1)) AND is_enabled = 1`,
  )
    .bind(JSON.stringify(apps))
    .all<{ id: string; app_id: string; event_types: string | null }>();
  const ids: string[] = new Array(events.length);
  await Promise.all(
    apps.map(async (app) => {
      const mine = events.flatMap((e, i) => (e.appId === app ? [i] : []));
      const targets = mine.map((i) => {
        const e = events[i] as ToStore;
        return results
          .filter(
            (w) =>
              w.app_id === app && (w.event_types === null || (JSON.parse(w.event_types) as string[]).includes(e.type)),
          )
          .map((w) => w.id);
      });
      const stored = await env.FLOOR_APPLICATIONS.getByName(app).publish(
        mine.map((i) => events[i] as ToStore),
        targets,
      );
      mine.forEach((at, k) => {
        ids[at] = stored[k] as string;
      });
    }),
  );
  const value = batch ? `{"event_ids":${JSON.stringify(ids)}}` : `{"event_id":"${ids[0]}"}`;
  return new Response(`{"return":0,"message":"success","value":${value}}`, {
    status: 202,
    headers: { 'content-type': 'application/json' },
  });
}

export class FloorApplication extends DurableObject<ObjectsEnv> {
  private last = 0n;

  constructor(ctx: DurableObjectState, env: ObjectsEnv) {
    super(ctx, env);
    ctx.storage.sql.exec(`
      CREATE TABLE IF NOT EXISTS events (event_id TEXT PRIMARY KEY, source_key TEXT UNIQUE, created_at TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS deliveries (delivery_id INTEGER PRIMARY KEY, webhook_id TEXT NOT NULL, created_at TEXT NOT NULL);`);
    const [row] = ctx.storage.sql
      .exec<{ id: string | null }>('SELECT CAST(MAX(delivery_id) AS TEXT) AS id FROM deliveries')
      .toArray();
    this.last = row?.id == null ? 0n : BigInt(row.id);
  }

  async publish(events: ToStore[], targets: string[][]): Promise<string[]> {
    const sql = this.ctx.storage.sql;
    const byWebhook = new Map<string, FloorDelivery[]>();
    const ids = this.ctx.storage.transactionSync(() =>
      events.map((e, i) => {
        const inserted = sql
          .exec(
            'INSERT OR IGNORE INTO events (event_id, source_key, created_at) VALUES (?1, ?2, ?3) RETURNING 1',
            e.eventId,
            e.sourceKey,
            e.createdAt,
          )
          .toArray();
        if (inserted.length === 0) {
          return sql.exec<{ event_id: string }>('SELECT event_id FROM events WHERE source_key = ?1', e.sourceKey).one()
            .event_id;
        }
        for (const webhookId of targets[i] ?? []) {
          const now = (BigInt(Date.now()) - 1_577_836_800_000n) << 20n;
          this.last = now > this.last ? now : this.last + 1n;
          const id = this.last.toString();
          sql.exec(
            'INSERT INTO deliveries (delivery_id, webhook_id, created_at) VALUES (CAST(?1 AS INTEGER), ?2, ?3)',
            id,
            webhookId,
            e.createdAt,
          );
          const list = byWebhook.get(webhookId) ?? [];
          list.push({
            delivery_id: id,
            event_id: e.eventId,
            app_id: e.appId,
            type: e.type,
            payload: e.payload,
            created_at: e.createdAt,
          });
          byWebhook.set(webhookId, list);
        }
        return e.eventId;
      }),
    );
    await Promise.all(
      [...byWebhook].map(([webhookId, list]) => this.env.FLOOR_ENDPOINTS.getByName(webhookId).enqueue(webhookId, list)),
    );
    return ids;
  }

  size(): number {
    return this.ctx.storage.sql.databaseSize;
  }
}

const encoder = new TextEncoder();
const bytesOf = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const base64Of = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
let aes: Promise<CryptoKey> | undefined;
const hmacKeys = new Map<string, Promise<CryptoKey>>();

function hmacKey(env: ObjectsEnv, sealed: string): Promise<CryptoKey> {
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
async function sixAtOnce<T, R>(items: T[], task: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await task(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(6, items.length) }, worker));
  return out;
}

interface Due {
  id: string;
  event_id: string;
  payload: string;
  attempts: number;
}

export class FloorEndpoint extends DurableObject<ObjectsEnv> {
  constructor(ctx: DurableObjectState, env: ObjectsEnv) {
    super(ctx, env);
    ctx.storage.sql.exec(`
      CREATE TABLE IF NOT EXISTS deliveries (delivery_id INTEGER PRIMARY KEY, event_id TEXT NOT NULL, app_id TEXT NOT NULL,
        type TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at TEXT, last_status INTEGER, created_at TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
      CREATE TABLE IF NOT EXISTS delivery_attempts (delivery_id INTEGER NOT NULL, attempt INTEGER NOT NULL,
        attempted_at TEXT NOT NULL, status INTEGER, error TEXT, duration_ms INTEGER NOT NULL, body TEXT,
        PRIMARY KEY (delivery_id, attempt)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS endpoint (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;`);
  }

  async enqueue(webhookId: string, deliveries: FloorDelivery[]): Promise<void> {
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      sql.exec(`INSERT OR IGNORE INTO endpoint (key, value) VALUES ('webhook_id', ?1)`, webhookId);
      for (const d of deliveries) {
        sql.exec(
          `INSERT OR IGNORE INTO deliveries (delivery_id, event_id, app_id, type, payload, next_attempt_at, created_at)
           VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?6)`,
          d.delivery_id,
          d.event_id,
          d.app_id,
          d.type,
          d.payload,
          d.created_at,
        );
      }
    });
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    const sql = this.ctx.storage.sql;
    const webhookId = sql.exec<{ value: string }>(`SELECT value FROM endpoint WHERE key = 'webhook_id'`).one().value;
    for (;;) {
      const due = sql
        .exec<Due & Record<string, SqlStorageValue>>(
          `SELECT CAST(delivery_id AS TEXT) AS id, event_id, payload, attempts FROM deliveries
           WHERE status = 'pending' AND next_attempt_at <= ?1 ORDER BY next_attempt_at, delivery_id LIMIT 50`,
          new Date().toISOString(),
        )
        .toArray();
      if (due.length === 0) break;
      const hook = await this.env.DB.prepare('SELECT url, secret FROM webhooks WHERE webhook_id = ?1')
        .bind(webhookId)
        .first<{ url: string; secret: string }>();
      if (hook === null) break;
      const key = await hmacKey(this.env, hook.secret);
      const done = await sixAtOnce(due, async (row) => {
        const at = Date.now();
        const timestamp = Math.floor(at / 1000);
        const signed = await crypto.subtle.sign(
          'HMAC',
          key,
          encoder.encode(`${row.event_id}.${timestamp}.${row.payload}`),
        );
        let status: number | null = null;
        let body: string | null = null;
        try {
          const res = await fetch(hook.url, {
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
          status = res.status;
          body = (await res.text()).slice(0, 1024);
        } catch {
          // No reply: a connection error.
        }
        return { row, at, status, body, ms: Date.now() - at };
      });
      this.ctx.storage.transactionSync(() => {
        for (const d of done) {
          const ok = d.status !== null && d.status >= 200 && d.status < 300;
          sql.exec(
            `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, error, duration_ms, body)
             VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7)`,
            d.row.id,
            d.row.attempts + 1,
            new Date(d.at).toISOString(),
            d.status,
            d.status === null ? 'connection' : null,
            d.ms,
            d.body,
          );
          sql.exec(
            `UPDATE deliveries SET status = ?2, attempts = attempts + 1, next_attempt_at = ?3, last_status = ?4
             WHERE delivery_id = CAST(?1 AS INTEGER)`,
            d.row.id,
            ok ? 'succeeded' : 'pending',
            ok ? null : new Date(d.at + 5000).toISOString(),
            d.status,
          );
        }
      });
    }
    const [next] = sql
      .exec<{ at: string | null }>(`SELECT MIN(next_attempt_at) AS at FROM deliveries WHERE status = 'pending'`)
      .toArray();
    if (next?.at != null) await this.ctx.storage.setAlarm(Date.parse(next.at));
  }

  /** The delivery log's page: newest first, `limit` + 1 rows. */
  list(limit: number): Record<string, SqlStorageValue>[] {
    return this.ctx.storage.sql
      .exec(
        `SELECT CAST(delivery_id AS TEXT) AS delivery_id, event_id, type, status, attempts, next_attempt_at,
           last_status, created_at FROM deliveries ORDER BY delivery_id DESC LIMIT ?1`,
        limit + 1,
      )
      .toArray();
  }

  /** Seeding (the delivery log's data): deliveries with their state, as the bench's tool gives them. */
  seed(webhookId: string, deliveries: (FloorDelivery & { status: string; attempts: number })[]): void {
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      sql.exec(`INSERT OR IGNORE INTO endpoint (key, value) VALUES ('webhook_id', ?1)`, webhookId);
      for (const d of deliveries) {
        sql.exec(
          `INSERT OR IGNORE INTO deliveries (delivery_id, event_id, app_id, type, payload, status, attempts, created_at)
           VALUES (CAST(?1 AS INTEGER), ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
          d.delivery_id,
          d.event_id,
          d.app_id,
          d.type,
          d.payload,
          d.status,
          d.attempts,
          d.created_at,
        );
      }
    });
  }

  /** Deliveries by status: what the bench checks after a run. */
  stats(_since: string): { pending: number; succeeded: number }[] {
    return this.ctx.storage.sql
      .exec<{ pending: number; succeeded: number }>(
        `SELECT COALESCE(SUM(status = 'pending'), 0) AS pending, COALESCE(SUM(status = 'succeeded'), 0) AS succeeded
         FROM deliveries`,
      )
      .toArray();
  }

  size(): number {
    return this.ctx.storage.sql.databaseSize;
  }
}
