// The floor reference: a bare fetch handler that runs exactly the D1 statements the service runs
// for each operation (the same store functions), with no framework, no authentication and no
// validation. The owner of a seeded webhook is derived from its id, as the harness seeds them.
import { deleteWebhook, setWebhookEnabled, webhookExists } from '../src/webhooks/store';

interface Env {
  DB: D1Database;
  BENCH_APPS: string;
}

const reply = (ok: boolean) =>
  new Response(ok ? '{"return":0,"message":"success"}' : '{"return":64063,"message":"delete fail"}', {
    status: ok ? 200 : 404,
    headers: { 'content-type': 'application/json' },
  });

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const apps = Number(env.BENCH_APPS);
    const actor = (id: string) => ({ appId: `app-${(Number(id) - 1) % apps}`, jti: null, requestId: 'floor' });
    if (request.method === 'DELETE') {
      const id = new URL(request.url).searchParams.get('webhook_id') as string;
      return reply(await deleteWebhook(env.DB, id, actor(id)));
    }
    const body = (await request.json()) as { webhook_id: number | string; is_enabled?: boolean };
    const id = String(body.webhook_id);
    return reply(
      body.is_enabled === undefined
        ? await webhookExists(env.DB, id, actor(id).appId)
        : await setWebhookEnabled(env.DB, id, body.is_enabled, actor(id)),
    );
  },
};
