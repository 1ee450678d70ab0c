// A webhook change that has answered applies to every event stored after it, also for a publish
// that read its subscribers from D1 before the change committed and reaches the application's
// object after the change answered: the object, told of the change before the operation answers,
// reads the subscribers again. Each case publishes with such a stale read (as a publish under way
// during the change would) and checks what the endpoints hold.
import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { eventToStore, parseEvent } from '../src/events/event';
import { publishToSubscribers } from '../src/events/fan-out';
import { readSubscribers, type SubscribersRead } from '../src/webhooks/store/subscribers';
import { deliveriesOfEvent } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { del, fetchAndWait, ORIGIN, PATH, put, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

const read = (app: string) => readSubscribers(env.DB, [app]);

/** Publishes one event of `app` with the subscribers `seen` gave; the webhooks of `hooks` that got a delivery. */
async function publishWith(seen: SubscribersRead, app: string, hooks: string[], type = 'NEW_NFT', data: unknown = {}) {
  const [stored] = await publishToSubscribers(env, [eventToStore(parseEvent({ app_id: app, type, data }), null)], seen);
  const eventId = stored?.eventId as string;
  const got: string[] = [];
  for (const id of hooks) if ((await deliveriesOfEvent(id, eventId)).length > 0) got.push(id);
  return got;
}

const patch = async (app: string, body: unknown) =>
  expectValue(
    await fetchAndWait(
      {},
      new Request(ORIGIN + PATH, {
        method: 'PATCH',
        headers: { ...bearer(await tokenFor(app)), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    ),
  );

/** Lines the service logged while `run` ran that say the subscribers were read again. */
async function rereads(run: () => Promise<unknown>): Promise<number> {
  let n = 0;
  vi.spyOn(console, 'info').mockImplementation((line: unknown) => {
    if (String(line).includes('subscribers read again')) n++;
  });
  await run();
  vi.restoreAllMocks();
  return n;
}

describe('a webhook change that has answered applies to every event stored after it', () => {
  it('a filter patched after the read: the event meets the new filter, both ways', async () => {
    const app = freshApp();
    const a = (await registerWebhook(app, { filter: { 'data.kind': 'sale' } })).id;
    const b = (await registerWebhook(app, { url: `https://${app}.example.com/b`, filter: { 'data.kind': 'mint' } })).id;
    const stale = await read(app);
    await patch(app, { webhook_id: a, filter: { 'data.kind': 'mint' } });
    await patch(app, { webhook_id: b, filter: null });
    // With the stale read only `a`'s old filter would take a sale; now only `b` (no filter) does.
    expect(await publishWith(stale, app, [a, b], 'NEW_NFT', { kind: 'sale' })).toEqual([b]);
    expect(await publishWith(await read(app), app, [a, b], 'NEW_NFT', { kind: 'mint' })).toEqual([a, b]);
  });

  it('event types patched after the read', async () => {
    const app = freshApp();
    const hook = (await registerWebhook(app, { event_types: ['NEW_NFT'] })).id;
    const stale = await read(app);
    await patch(app, { webhook_id: hook, event_types: ['NFT_SOLD'] });
    expect(await publishWith(stale, app, [hook], 'NEW_NFT')).toEqual([]);
    expect(await publishWith(stale, app, [hook], 'NFT_SOLD')).toEqual([hook]);
  });

  it('a webhook disabled, enabled, created or deleted after the read', async () => {
    const app = freshApp();
    const token = bearer(await tokenFor(app));
    const off = (await registerWebhook(app)).id;
    const on = (await registerWebhook(app, { url: `https://${app}.example.com/on`, is_enabled: false })).id;
    const gone = (await registerWebhook(app, { url: `https://${app}.example.com/gone` })).id;
    const stale = await read(app);
    expect((await put({ webhook_id: off, is_enabled: false }, token)).status).toBe(200);
    expect((await put({ webhook_id: on, is_enabled: true }, token)).status).toBe(200);
    expect((await del(`webhook_id=${gone}`, token)).status).toBe(200);
    const made = (await registerWebhook(app, { url: `https://${app}.example.com/new` })).id;
    expect(await publishWith(stale, app, [off, on, gone, made])).toEqual([on, made]);
  });

  it('told to a warm object (one that has published already): a stale publish still reads again', async () => {
    const app = freshApp();
    receiver();
    const hook = (await registerWebhook(app, { event_types: ['NEW_NFT'] })).id;
    const other = (await registerWebhook(app, { url: `https://${app}.example.com/other`, event_types: ['NFT_SOLD'] }))
      .id;
    // The object publishes first: it has read the newest change it was told, and keeps it.
    expect(await publishWith(await read(app), app, [hook, other], 'NEW_NFT')).toEqual([hook]);
    const stale = await read(app);
    await patch(app, { webhook_id: hook, event_types: ['NFT_SOLD'] });
    await patch(app, { webhook_id: other, event_types: ['NEW_NFT'] });
    expect(
      await rereads(async () => expect(await publishWith(stale, app, [hook, other], 'NEW_NFT')).toEqual([other])),
    ).toBe(1);
    expect(await publishWith(stale, app, [hook, other], 'NFT_SOLD')).toEqual([hook]);
  });

  it('a publish that read after the change reads nothing again; one that read before reads once', async () => {
    const app = freshApp();
    const hook = (await registerWebhook(app)).id;
    await patch(app, { webhook_id: hook, description: 'before' });
    const stale = await read(app);
    await patch(app, { webhook_id: hook, filter: { 'data.kind': 'mint' } });
    expect(await rereads(() => publishWith(stale, app, [hook]))).toBe(1);
    expect(await rereads(() => publishWith(stale, app, [hook]))).toBe(1);
    expect(await rereads(async () => publishWith(await read(app), app, [hook]))).toBe(0);
    // A change that records nothing (the same state again) is not a change.
    const now = await read(app);
    expect((await put({ webhook_id: hook, is_enabled: true }, bearer(await tokenFor(app)))).status).toBe(200);
    expect(await rereads(() => publishWith(now, app, [hook]))).toBe(0);
  });

  it("the read says each application's newest change: its audit record's id", async () => {
    const app = freshApp();
    const other = freshApp();
    expect((await readSubscribers(env.DB, [app, other])).seen).toEqual({ [app]: 0, [other]: 0 });
    const hook = (await registerWebhook(app)).id;
    const { results } = await env.DB.prepare('SELECT MAX(audit_id) AS id FROM webhook_audit WHERE app_id = ?1')
      .bind(app)
      .all<{ id: number }>();
    const got = await readSubscribers(env.DB, [app, other]);
    expect(got.seen).toEqual({ [app]: results[0]?.id, [other]: 0 });
    expect(got.subscribers.map((s) => s.webhook_id)).toEqual([hook]);
  });
});
