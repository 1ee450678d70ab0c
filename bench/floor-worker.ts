// The floor reference of `npm run bench`: a bare fetch handler that runs, for each operation, the
// fewest D1 statements that keep the service's data rules, written out here and never imported
// from src/ (a floor built from our own store would hide what our statements waste). No
// framework, authentication, validation, log line or retries. The owner of a seeded webhook is
// derived from its id, as the harness seeds them; a POST's application is its `x-bench-app`.
// Like the service, it runs them in a D1 session (reads anywhere, writes at the primary) and
// answers the session's bookmark, as every reply that used D1 must; FLOOR_SESSIONS empty (the
// bench's --bare-floor) runs them on the plain binding, to show what sessions cost.
//
//   PUT    conditional audit insert + update (its count tells found from missing)
//   DELETE audit insert + delete
//   GET    one SELECT of the webhook, or of a page of 21 (20 and "is there more")
//   GET /v1.0/app/nft/webhook/delivery?webhook_id=   one D1 read (the owned webhook exists), then
//          one RPC to its FloorEndpoint for a page of 21 of its deliveries, newest first
//   POST   insert that checks the URL and the cap itself + audit insert + the row back
//   POST /v1.0/platform/nft/event, /events   bench/floor-objects.ts (one D1 read, one RPC per
//          application to its FloorApplication, which hands the deliveries to FloorEndpoints)

import { FloorApplication, FloorEndpoint, type ObjectsEnv, publishToObjects } from './floor-objects';

export { FloorApplication, FloorEndpoint };

interface Env extends ObjectsEnv {
  DB: D1Database;
  BENCH_APPS: string;
  FLOOR_SESSIONS: string;
}

const json = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { 'content-type': 'application/json', ...headers } });
const ok = () => json(200, '{"return":0,"message":"success"}');
const fail = (status: number, code: number, message: string) =>
  json(status, `{"return":${code},"message":"${message}"}`);

const ROW = `json_object('webhook_id', webhook_id, 'app_id', app_id, 'url', url, 'is_enabled', is_enabled,
  'created_at', created_at, 'updated_at', updated_at)`;

interface Row {
  id: string;
  url: string;
  is_enabled: number;
  created_at: string;
  updated_at: string;
}
const webhook = (r: Row) =>
  `{"webhook_id":${r.id},"url":${JSON.stringify(r.url)},"is_enabled":${r.is_enabled === 1},"created_at":"${r.created_at}","updated_at":"${r.updated_at}"}`;

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const session = env.FLOOR_SESSIONS
      ? env.DB.withSession(request.method === 'GET' ? 'first-unconstrained' : 'first-primary')
      : undefined;
    const response = await answer(request, { ...env, DB: (session ?? env.DB) as D1Database }, ctx);
    const bookmark = session?.getBookmark();
    if (bookmark) response.headers.set('x-d1-bookmark', bookmark);
    return response;
  },
};

/** The operation's statements and reply. */
async function answer(request: Request, env: Env, _ctx: ExecutionContext): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === '/v1.0/platform/nft/event') return publishToObjects(request, env, false);
  if (url.pathname === '/v1.0/platform/nft/events') return publishToObjects(request, env, true);
  const ownerOf = (id: string) => `app-${(Number(id) - 1) % Number(env.BENCH_APPS)}`;

  if (request.method === 'DELETE') {
    const id = url.searchParams.get('webhook_id') as string;
    const app = ownerOf(id);
    const [, deleted] = await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, actor_jti, request_id)
           SELECT webhook_id, app_id, 'delete', ${ROW}, ?2, NULL, 'floor' FROM webhooks
           WHERE webhook_id = ?1 AND app_id = ?2`,
      ).bind(id, app),
      env.DB.prepare('DELETE FROM webhooks WHERE webhook_id = ?1 AND app_id = ?2').bind(id, app),
    ]);
    return deleted?.meta.changes === 1 ? ok() : fail(404, 64063, 'delete fail');
  }

  if (request.method === 'PUT') {
    const body = (await request.json()) as { webhook_id: number | string; is_enabled: boolean };
    const id = String(body.webhook_id);
    const app = ownerOf(id);
    const state = body.is_enabled ? 1 : 0;
    const [, updated] = await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, actor_jti, request_id)
           SELECT webhook_id, app_id, ?3, ${ROW}, ?2, NULL, 'floor' FROM webhooks
           WHERE webhook_id = ?1 AND app_id = ?2 AND is_enabled <> ?4`,
      ).bind(id, app, state === 1 ? 'enable' : 'disable', state),
      env.DB.prepare(
        `UPDATE webhooks SET is_enabled = ?3,
             updated_at = CASE WHEN is_enabled = ?3 THEN updated_at ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END
           WHERE webhook_id = ?1 AND app_id = ?2`,
      ).bind(id, app, state),
    ]);
    return updated?.meta.changes === 1 ? ok() : fail(404, 64062, 'update fail');
  }

  if (request.method === 'GET' && url.pathname === '/v1.0/app/nft/webhook/delivery') return deliveryPage(url, env);

  if (request.method === 'GET') {
    const id = url.searchParams.get('webhook_id');
    const columns = 'CAST(webhook_id AS TEXT) AS id, url, is_enabled, created_at, updated_at';
    if (id !== null) {
      const row = await env.DB.prepare(`SELECT ${columns} FROM webhooks WHERE webhook_id = ?1 AND app_id = ?2`)
        .bind(id, ownerOf(id))
        .first<Row>();
      return row === null
        ? fail(404, 64060, 'query fail')
        : json(200, `{"return":0,"message":"success","value":${webhook(row)}}`);
    }
    const app = request.headers.get('x-bench-app') as string;
    const { results } = await env.DB.prepare(
      `SELECT ${columns} FROM webhooks WHERE app_id = ?1 ORDER BY webhook_id LIMIT 21`,
    )
      .bind(app)
      .all<Row>();
    const page = results.slice(0, 20);
    const next = results.length > 20 ? `"${btoa(`w1:${page[19]?.id}`)}"` : 'null';
    return json(
      200,
      `{"return":0,"message":"success","value":{"webhooks":[${page.map(webhook).join(',')}],"next_cursor":${next}}}`,
    );
  }

  // POST
  const app = request.headers.get('x-bench-app') as string;
  const body = (await request.json()) as { url: string; is_enabled?: boolean };
  const [inserted, , created] = await env.DB.batch<Row>([
    env.DB.prepare(
      `INSERT INTO webhooks (app_id, url, is_enabled) SELECT ?1, ?2, ?3
         WHERE NOT EXISTS (SELECT 1 FROM webhooks WHERE app_id = ?1 AND url = ?2)
           AND (SELECT COUNT(*) FROM webhooks WHERE app_id = ?1) < 100`,
    ).bind(app, body.url, body.is_enabled === false ? 0 : 1),
    env.DB.prepare(
      `INSERT INTO webhook_audit (webhook_id, app_id, action, row_before, actor, actor_jti, request_id)
         SELECT webhook_id, app_id, 'create', ${ROW}, ?1, NULL, 'floor' FROM webhooks
         WHERE webhook_id = last_insert_rowid() AND changes() = 1`,
    ).bind(app),
    env.DB.prepare(
      `SELECT CAST(webhook_id AS TEXT) AS id, url, is_enabled, created_at, updated_at FROM webhooks
         WHERE app_id = ?1 AND url = ?2`,
    ).bind(app, body.url),
  ]);
  const row = created?.results[0];
  if (inserted?.meta.changes !== 1 || row === undefined) return fail(409, 64061, 'create fail');
  return json(201, `{"return":0,"message":"success","value":${webhook(row)}}`, {
    location: `/v1.0/app/nft/webhook?webhook_id=${row.id}`,
  });
}

interface DeliveryRow {
  delivery_id: string;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_status: number | null;
  created_at: string;
}
const text = (value: string | null) => (value === null ? 'null' : JSON.stringify(value));
const delivery = (r: DeliveryRow) =>
  `{"delivery_id":${r.delivery_id},"event_id":${JSON.stringify(r.event_id)},"type":${JSON.stringify(r.type)},"status":${JSON.stringify(r.status)},"attempts":${r.attempts},"next_attempt_at":${text(r.next_attempt_at)},"last_status":${r.last_status ?? 'null'},"created_at":${JSON.stringify(r.created_at)}}`;

/** The first page (20, newest first) of a webhook's deliveries: the owned webhook read in D1, then its object's page. */
async function deliveryPage(url: URL, env: Env): Promise<Response> {
  const id = url.searchParams.get('webhook_id') as string;
  const app = `app-${(Number(id) - 1) % Number(env.BENCH_APPS)}`;
  const found = await env.DB.prepare(
    'SELECT 1 AS found FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER) AND app_id = ?2',
  )
    .bind(id, app)
    .first();
  if (found === null) return fail(404, 64060, 'query fail');
  const rows = (await env.FLOOR_ENDPOINTS.getByName(id).list(20)) as unknown as DeliveryRow[];
  const list = rows.slice(0, 20);
  const last = list[19];
  const next =
    rows.length > 20 && last !== undefined
      ? `"${btoa(`d1:${last.delivery_id}`).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}"`
      : 'null';
  return json(
    200,
    `{"return":0,"message":"success","value":{"deliveries":[${list.map(delivery).join(',')}],"next_cursor":${next}}}`,
  );
}
