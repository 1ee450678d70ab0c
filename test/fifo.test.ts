// FIFO endpoints: a webhook with `"ordering": "fifo"` is sent one delivery at a time, in the order
// its events were stored (by delivery id); a failing head holds the rest, shown pending.
import { env, runInDurableObject, SELF } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { outbox } from '../src/events/store/outbox';
import { auditRows } from './helpers/database';
import { applicationOf, deliverDue, endpointSql, makeDue } from './helpers/objects';
import { expectDocumented, expectSchemaAgrees } from './helpers/openapi';
import { type Received, receiver } from './helpers/receiver';
import { expectCreateFail, expectUpdateFail, expectValue } from './helpers/replies';
import { fetchAndWait, ORIGIN, post, readLog, stoppedAfterEachTest, URL_ } from './helpers/requests';
import { bearer, freshApp, platformToken, tokenFor } from './helpers/tokens';

/** Webhooks registered here (and any added to `used`) stop their objects' alarms when a test ends. */
const { register } = stoppedAfterEachTest();

afterEach(() => {
  vi.restoreAllMocks();
});

const patch = (body: unknown, headers: Record<string, string>) =>
  SELF.fetch(
    new Request(URL_, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }),
  );

/** The event number (`data.n`) of a request's body. */
const numberOf = (req: Received) => (JSON.parse(req.body) as { data: { n: number } }).data.n;

/** The receiver at the app's host: `reply` answers; requests to other hosts are 503 and not kept. */
function receiverAt(app: string, reply: (req: Received) => Response | Promise<Response>) {
  const requests: Received[] = [];
  receiver((req) => {
    if (new URL(req.url).host !== `${app}.example.com`) return new Response(null, { status: 503 });
    requests.push(req);
    return reply(req);
  });
  return { requests };
}

/** Publishes events numbered from..from + count - 1 for `app` as one batch; returns their ids in order. */
async function publishNumbered(app: string, count: number, from = 1): Promise<string[]> {
  const events = Array.from({ length: count }, (_, i) => ({
    app_id: app,
    type: 'NEW_NFT',
    id: `n${from + i}`,
    data: { n: from + i },
  }));
  const res = await fetchAndWait(
    {},
    new Request(`${ORIGIN}/v1.0/platform/nft/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(await platformToken()) },
      body: JSON.stringify({ events }),
    }),
  );
  return (await expectValue<{ event_ids: string[] }>(res, 202)).value.event_ids;
}

interface Row {
  id: string;
  event_id: string;
  status: string;
  attempts: number;
}

/** The endpoint's deliveries by id (the order of their events). */
const deliveriesAt = (hookId: string) =>
  endpointSql<Row>(
    hookId,
    'SELECT CAST(delivery_id AS TEXT) AS id, event_id, status, attempts FROM deliveries ORDER BY delivery_id',
  );

/** The delivery log's statuses, by delivery id as written. */
async function logStatuses(app: string, hookId: string): Promise<Map<string, string>> {
  const { text } = await expectValue(await readLog(`webhook_id=${hookId}&limit=100`, bearer(await tokenFor(app))));
  return new Map([...text.matchAll(/"delivery_id":(\d+).*?"status":"(\w+)"/g)].map((m) => [m[1]!, m[2]!]));
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('"ordering": "fifo" in the API', () => {
  it('is stored from POST, shown in every webhook object, set and cleared by PATCH with an audit record', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const created = await post({ url: `https://${app}.example.com/a`, ordering: 'fifo' }, headers);
    await expectDocumented(created.clone(), 'post');
    const fifo = await expectValue<{ webhook_id: number; ordering: string | null }>(created, 201);
    expect(fifo.value.ordering).toBe('fifo');
    const plain = await expectValue<{ webhook_id: number; ordering: string | null }>(
      await post({ url: `https://${app}.example.com/b` }, headers),
      201,
    );
    expect(plain.value.ordering).toBeNull();
    const row = (id: number) =>
      env.DB.prepare('SELECT ordering FROM webhooks WHERE webhook_id = ?1').bind(id).first<{ ordering: string }>();
    expect(await row(fifo.value.webhook_id)).toEqual({ ordering: 'fifo' });

    const patched = await patch({ webhook_id: fifo.value.webhook_id, ordering: null }, headers);
    await expectDocumented(patched.clone(), 'patch');
    const cleared = await expectValue<{ ordering: string | null }>(patched);
    expect(cleared.value.ordering).toBeNull();
    expect(await row(fifo.value.webhook_id)).toEqual({ ordering: null });
    const set = await expectValue<{ ordering: string | null }>(
      await patch({ webhook_id: plain.value.webhook_id, ordering: 'fifo' }, headers),
    );
    expect(set.value.ordering).toBe('fifo');
    const audit = await auditRows(String(fifo.value.webhook_id));
    expect(audit.map((a) => a.action)).toEqual(['create', 'update']);
    expect(JSON.parse(audit[1]!.row_before)).toMatchObject({ ordering: 'fifo' });
    // A PATCH without it leaves it as it is.
    const kept = await expectValue<{ ordering: string | null }>(
      await patch({ webhook_id: plain.value.webhook_id, description: 'x' }, headers),
    );
    expect(kept.value.ordering).toBe('fifo');
  });

  it('is documented: the request schema accepts exactly the orderings POST accepts', async () => {
    const app = freshApp();
    const bodies = ['fifo', null, 'FIFO', 'lifo', true, 0].map((ordering, i) =>
      JSON.stringify({ url: `https://${app}.example.com/s${i}`, ordering }),
    );
    await expectSchemaAgrees('POST', '/v1.0/app/nft/webhook', await tokenFor(app), bodies);
  });

  it.each([['FIFO'], ['lifo'], [true], [1], [{}]])('refuses ordering %j: 400 naming it', async (bad) => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const created = await post({ url: `https://${app}.example.com/a`, ordering: bad }, headers);
    expect(created.headers.get('x-error-detail')).toMatch(/ordering/);
    await expectDocumented(created.clone(), 'post');
    await expectCreateFail(created, 400);
    const hook = await register(app);
    const patched = await patch({ webhook_id: Number(hook.id), ordering: bad }, headers);
    expect(patched.headers.get('x-error-detail')).toMatch(/ordering/);
    await expectUpdateFail(patched, 400);
    const stored = await env.DB.prepare('SELECT COUNT(*) AS n FROM webhooks WHERE app_id = ?1')
      .bind(app)
      .first<{ n: number }>();
    expect(stored?.n).toBe(1);
  });
});

describe('a FIFO endpoint', () => {
  it('sends one at a time in the order of its events; a failing head holds the rest, shown pending', async () => {
    const app = freshApp();
    const hook = await register(app, { ordering: 'fifo' });
    let thirds = 0;
    let open = 0;
    let most = 0;
    const { requests } = receiverAt(app, async (req) => {
      most = Math.max(most, ++open);
      await new Promise((resolve) => setTimeout(resolve, 5));
      open--;
      return numberOf(req) === 3 && ++thirds <= 2 ? new Response('busy', { status: 503 }) : new Response('ok');
    });
    await publishNumbered(app, 20);
    await deliverDue(hook.id);
    expect(requests.map(numberOf)).toEqual([1, 2, 3]);

    const rows = await deliveriesAt(hook.id);
    expect(rows.map((r) => r.status)).toEqual(['succeeded', 'succeeded', ...Array(18).fill('pending')]);
    expect(rows.slice(3).every((r) => r.attempts === 0)).toBe(true);
    // The log shows the held ones pending, never attempted.
    const log = await logStatuses(app, hook.id);
    for (const r of rows.slice(2)) expect(log.get(r.id)).toBe('pending');

    // Its next attempt comes on its own schedule; the others wait behind it.
    const third = rows[2]!.id;
    await makeDue(hook.id, third);
    await deliverDue(hook.id);
    expect(requests.map(numberOf)).toEqual([1, 2, 3, 3]);
    expect((await deliveriesAt(hook.id))[3]).toMatchObject({ status: 'pending', attempts: 0 });

    await makeDue(hook.id, third);
    await deliverDue(hook.id);
    expect(requests.map(numberOf)).toEqual([1, 2, 3, 3, 3, ...range(4, 20)]);
    const after = await deliveriesAt(hook.id);
    expect(after.map((r) => r.status)).toEqual(Array(20).fill('succeeded'));
    expect(after[2]!.attempts).toBe(3);
    // Each request started after the one before it answered: none overlapped.
    expect(most).toBe(1);
  });

  it('lets the next go once the head has ended failed (its schedule exhausted)', async () => {
    const app = freshApp();
    const hook = await register(app, { ordering: 'fifo' });
    const { requests } = receiverAt(app, (req) =>
      numberOf(req) === 1 ? new Response('no', { status: 500 }) : new Response('ok'),
    );
    await publishNumbered(app, 3);
    await deliverDue(hook.id);
    expect(requests.map(numberOf)).toEqual([1]);
    const [head] = await deliveriesAt(hook.id);
    // Its last scheduled attempt (the default schedule has seven retries).
    await makeDue(hook.id, head!.id, 7);
    await deliverDue(hook.id);
    expect(requests.map(numberOf)).toEqual([1, 1, 2, 3]);
    expect((await deliveriesAt(hook.id)).map((r) => r.status)).toEqual(['failed', 'succeeded', 'succeeded']);
  });

  it('cancels its deliveries, none attempted, once disabled', async () => {
    const app = freshApp();
    const hook = await register(app, { ordering: 'fifo' });
    const { requests } = receiverAt(app, () => new Response('no', { status: 503 }));
    await publishNumbered(app, 4);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    await env.DB.prepare('UPDATE webhooks SET is_enabled = 0 WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(hook.id)
      .run();
    const rows = await deliveriesAt(hook.id);
    for (const r of rows) await makeDue(hook.id, r.id);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    expect((await deliveriesAt(hook.id)).map((r) => r.status)).toEqual(Array(4).fill('cancelled'));
  });

  it('sends as the others once PATCH clears its ordering', async () => {
    const app = freshApp();
    const hook = await register(app, { ordering: 'fifo' });
    let first = true;
    const { requests } = receiverAt(app, () => {
      if (!first) return new Response('ok');
      first = false;
      return new Response('busy', { status: 503 });
    });
    await publishNumbered(app, 3);
    await deliverDue(hook.id);
    expect(requests.map(numberOf)).toEqual([1]);
    await expectValue(await patch({ webhook_id: Number(hook.id), ordering: null }, bearer(await tokenFor(app))));
    // Told of the change, its object sends at once (not when the head's retry is due): the head
    // waits for its retry; the others no longer wait behind it.
    await vi.waitFor(() => expect(requests.map(numberOf)).toEqual([1, 2, 3]), { timeout: 3000 });
    expect((await deliveriesAt(hook.id)).map((r) => r.status)).toEqual(['pending', 'succeeded', 'succeeded']);
  });
});

describe('a webhook without ordering', () => {
  it('still sends up to six at once, a failing one holding none', async () => {
    const app = freshApp();
    const hook = await register(app);
    let open = 0;
    let most = 0;
    const { requests } = receiverAt(app, async (req) => {
      open++;
      most = Math.max(most, open);
      await new Promise((resolve) => setTimeout(resolve, 20));
      open--;
      return numberOf(req) === 1 ? new Response('busy', { status: 503 }) : new Response('ok');
    });
    await publishNumbered(app, 12);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(12);
    expect(most).toBe(6);
    const rows = await deliveriesAt(hook.id);
    expect(rows.map((r) => r.status)).toEqual(['pending', ...Array(11).fill('succeeded')]);
  });
});

describe('the handover to the endpoints', () => {
  it("takes a batch's events from the outbox in the order they were stored", async () => {
    const app = freshApp();
    const hook = await register(app, { ordering: 'fifo' });
    // The endpoint does not take them: they stay in the application's outbox.
    const endpoints = env.ENDPOINTS;
    await runInDurableObject(applicationOf(app), (instance) => {
      const object = instance as unknown as { env: CloudflareBindings };
      object.env = {
        ...object.env,
        ENDPOINTS: { getByName: () => ({ handOver: () => Promise.reject(new Error('down')) }) },
      } as unknown as CloudflareBindings;
    });
    const ids = await publishNumbered(app, 30);
    const handed = await runInDurableObject(applicationOf(app), (_, state) => outbox(state.storage.sql, 200));
    expect(handed.map((h) => h.eventId)).toEqual(ids);
    const deliveryIds = handed.flatMap((h) => h.deliveries.map((d) => BigInt(d.delivery.delivery_id)));
    expect(deliveryIds).toEqual([...deliveryIds].sort((a, b) => (a < b ? -1 : 1)));

    // Handed over again (the alarm), they reach the endpoint and are sent in that order.
    await runInDurableObject(applicationOf(app), (instance) => {
      const object = instance as unknown as { env: CloudflareBindings };
      object.env = { ...object.env, ENDPOINTS: endpoints } as CloudflareBindings;
    });
    const { requests } = receiverAt(app, () => new Response('ok'));
    await runInDurableObject(applicationOf(app), (instance) => (instance as { alarm: () => Promise<void> }).alarm());
    // One at a time: a call runs twenty passes.
    await deliverDue(hook.id);
    await deliverDue(hook.id);
    expect(requests.map(numberOf)).toEqual(range(1, 30));
  });

  it('hands one endpoint the deliveries of publishes at once in the order they were stored', async () => {
    const app = freshApp();
    const hook = await register(app, { ordering: 'fifo' });
    // The endpoint's first handover is slow: the second publish's must still come after it.
    const endpoints = env.ENDPOINTS;
    const arrived: string[][] = [];
    let calls = 0;
    await runInDurableObject(applicationOf(app), (instance) => {
      const object = instance as unknown as { env: CloudflareBindings };
      object.env = {
        ...object.env,
        ENDPOINTS: {
          getByName: (name: string) => ({
            handOver: async (webhookId: string, deliveries: { event_id: string }[]) => {
              if (++calls === 1) await new Promise((resolve) => setTimeout(resolve, 100));
              arrived.push(deliveries.map((d) => d.event_id));
              return endpoints.getByName(name).handOver(webhookId, deliveries as never);
            },
            webhookChanged: () => endpoints.getByName(name).webhookChanged(),
          }),
        },
      } as unknown as CloudflareBindings;
    });
    const { requests } = receiverAt(app, () => new Response('ok'));
    const batches = await Promise.all([publishNumbered(app, 3, 1), publishNumbered(app, 2, 4)]);
    expect(arrived.map((events) => events.length).sort()).toEqual([2, 3]);
    // The order they were stored in: by delivery id.
    const stored = (await deliveriesAt(hook.id)).map((r) => r.event_id);
    expect(stored.sort()).toEqual(batches.flat().sort());
    expect(arrived.flat()).toEqual((await deliveriesAt(hook.id)).map((r) => r.event_id));
    await deliverDue(hook.id);
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual(arrived.flat());
  });
});
