// The floor of publishing (`POST /v1.0/platform/nft/event`), for `npm run bench`: written by hand
// and importing nothing from src/. No authentication, validation, framework, log line or retries:
// the body's JSON is read, the event and its deliveries are stored in one D1 batch, the reply is
// 202 with the event id, and the deliveries are queued after the reply (ctx.waitUntil), one
// message per delivery, as the service does.
//
//   INSERT OR IGNORE the event (a repeated publisher id of the application is ignored)
//   INSERT OR IGNORE one pending delivery per enabled webhook of the application whose
//     event_types is null or names the type, only if the event was stored now
//   SELECT the event's id (this one's, or the earlier one's of the same publisher id) and the
//     deliveries made now

export interface PublishEnv {
  DB: D1Database;
  DELIVERIES: Queue<{ delivery_id: string }>;
}

interface Published {
  app_id: string;
  type: string;
  id?: string;
  data: unknown;
}

export async function publish(request: Request, env: PublishEnv, ctx: ExecutionContext): Promise<Response> {
  const event = (await request.json()) as Published;
  const createdAt = new Date().toISOString();
  const eventId = `evt_${crypto.randomUUID().replaceAll('-', '')}`;
  const payload = `{"type":${JSON.stringify(event.type)},"timestamp":"${createdAt}","data":${JSON.stringify(event.data)}}`;
  const sourceKey = event.id === undefined ? null : `id:${event.id}`;
  const [, , found] = await env.DB.batch<{ event_id: string; deliveries: string }>([
    env.DB.prepare(
      `INSERT OR IGNORE INTO events (event_id, app_id, source_key, type, payload, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
    ).bind(eventId, event.app_id, sourceKey, event.type, payload, createdAt),
    env.DB.prepare(
      `INSERT OR IGNORE INTO deliveries (event_id, webhook_id, app_id, next_attempt_at, created_at)
         SELECT ?1, webhook_id, app_id, ?4, ?4 FROM webhooks
         WHERE app_id = ?2 AND is_enabled = 1
           AND (event_types IS NULL OR EXISTS (SELECT 1 FROM json_each(event_types) WHERE value = ?3))
           AND EXISTS (SELECT 1 FROM events WHERE event_id = ?1)`,
    ).bind(eventId, event.app_id, event.type, createdAt),
    env.DB.prepare(
      `SELECT COALESCE((SELECT event_id FROM events WHERE event_id = ?1),
           (SELECT event_id FROM events WHERE app_id = ?2 AND source_key = ?3)) AS event_id,
         (SELECT json_group_array(CAST(delivery_id AS TEXT)) FROM deliveries WHERE event_id = ?1) AS deliveries`,
    ).bind(eventId, event.app_id, sourceKey),
  ]);
  const row = found?.results[0] as { event_id: string; deliveries: string };
  const ids = JSON.parse(row.deliveries) as string[];
  if (ids.length > 0) {
    ctx.waitUntil(
      (async () => {
        for (let i = 0; i < ids.length; i += 100) {
          await env.DELIVERIES.sendBatch(
            ids.slice(i, i + 100).map((id) => ({ body: { delivery_id: id }, contentType: 'json' as const })),
          );
        }
      })(),
    );
  }
  return new Response(`{"return":0,"message":"success","value":{"event_id":"${row.event_id}"}}`, {
    status: 202,
    headers: { 'content-type': 'application/json' },
  });
}
