// What a sending pass asks of others: the webhook from D1 only when its object was told of a change
// (or what it read is a minute old), and the host's slots from the application's object only when
// another webhook of the application shares its host (its handovers say which).
import { runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WEBHOOK_TRUSTED_MS } from '../src/deliveries/gate';
import { countingDb } from './helpers/database';
import { SA_KEY } from './helpers/destinations';
import { applicationOf, endpointOf, pendingAt } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectSuccess } from './helpers/replies';
import { publishEvent, put, stoppedAfterEachTest } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

const { register } = stoppedAfterEachTest();
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** Runs the endpoint's passes (what its alarm does) with D1 counted; how many D1 calls they made. */
function countedPasses(webhookId: string): Promise<number> {
  return runInDurableObject(endpointOf(webhookId), async (instance) => {
    const object = instance as unknown as { env: CloudflareBindings; deliverDue(): Promise<void> };
    const own = object.env;
    const counted = countingDb(own.DB);
    Object.defineProperty(object, 'env', { value: { ...own, DB: counted.db }, configurable: true, writable: true });
    try {
      await object.deliverDue();
    } finally {
      Object.defineProperty(object, 'env', { value: own, configurable: true, writable: true });
    }
    return counted.calls();
  });
}

/** The hosts whose slots the application's object was asked for (the schedules its Hosts keep). */
const hostsAsked = (app: string) =>
  runInDurableObject(applicationOf(app), (instance) => [
    ...(instance as unknown as { hosts: { schedules: Map<string, unknown> } }).hosts.schedules.keys(),
  ]);

/** Whether the endpoint's object holds its webhook alone at its host (as its handovers told it). */
const aloneAtHost = (webhookId: string) =>
  runInDurableObject(
    endpointOf(webhookId),
    (instance) => (instance as unknown as { host: { alone: boolean } }).host.alone,
  );

/** The deliveries of these ids at the webhook's endpoint, by status. */
const statusOf = (webhookId: string, ids: string[]) =>
  runInDurableObject(endpointOf(webhookId), (_, state) =>
    ids.map(
      (id) =>
        state.storage.sql
          .exec<{ status: string }>('SELECT status FROM deliveries WHERE delivery_id = CAST(?1 AS INTEGER)', id)
          .one().status,
    ),
  );

describe('a pass reads its webhook from D1', () => {
  it('once, then keeps it until told of a change: disabled, its deliveries end; enabled again, they are sent', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const hook = await register(app);
    const { requests } = receiver();
    const mine = () => requests.filter((r) => r.url.startsWith(`https://${app}.example.com/`));

    await pendingAt(hook.id, app, 2);
    expect(await countedPasses(hook.id)).toBe(1);
    await pendingAt(hook.id, app, 2);
    expect(await countedPasses(hook.id)).toBe(0);
    expect(mine()).toHaveLength(4);

    // Disabled: told, so the next pass reads it and cancels what is due.
    await expectSuccess(await put({ webhook_id: hook.id, is_enabled: false }, headers));
    const held = await pendingAt(hook.id, app, 1);
    expect(await countedPasses(hook.id)).toBe(1);
    expect(await statusOf(hook.id, held)).toEqual(['cancelled']);

    // Enabled again: told too, so a pass does not keep sending nothing.
    await expectSuccess(await put({ webhook_id: hook.id, is_enabled: true }, headers));
    const sent = await pendingAt(hook.id, app, 1);
    expect(await countedPasses(hook.id)).toBe(1);
    expect(await statusOf(hook.id, sent)).toEqual(['succeeded']);
    expect(mine()).toHaveLength(5);
  });

  it('again once what it read is WEBHOOK_TRUSTED_MS old, told or not', async () => {
    const app = freshApp();
    const hook = await register(app);
    receiver();
    await pendingAt(hook.id, app, 1);
    expect(await countedPasses(hook.id)).toBe(1);
    vi.useFakeTimers({ now: Date.now() + WEBHOOK_TRUSTED_MS + 1000, toFake: ['Date'] });
    await pendingAt(hook.id, app, 1);
    expect(await countedPasses(hook.id)).toBe(1);
  });
});

describe("a pass asks the application's object for its host's slots", () => {
  it('never while its webhook is the only one of its application at its host', async () => {
    const app = freshApp();
    const hook = await register(app);
    await register(app, { url: `https://other.${app}.example.com/hook` });
    receiver();
    await publishEvent(app);
    await endpointOf(hook.id).deliverDue();
    expect(await hostsAsked(app)).toEqual([]);
  });

  it('while another shares it, told by the publish that makes one join it even when it delivers nothing to it', async () => {
    const app = freshApp();
    const first = await register(app, { event_types: ['NEW_NFT'] });
    receiver();
    await publishEvent(app, 'NEW_NFT');
    await endpointOf(first.id).deliverDue();
    expect(await hostsAsked(app)).toEqual([]);

    // A second webhook at the same host, of another type: the next publish (to it alone) tells
    // the first endpoint, whose next pass asks.
    const second = await register(app, { url: `https://${app}.example.com/second`, event_types: ['MOD_NFT'] });
    const held = await pendingAt(first.id, app, 1);
    expect(await aloneAtHost(first.id)).toBe(true);
    await publishEvent(app, 'MOD_NFT');
    expect(await aloneAtHost(first.id)).toBe(false);
    await endpointOf(first.id).deliverDue();
    expect(await hostsAsked(app)).toEqual([`https://${app}.example.com`]);
    expect(await statusOf(first.id, held)).toEqual(['succeeded']);
    await endpointOf(second.id).deliverDue();
  });
});

describe('the host of a destination beyond HTTP', () => {
  const aws = { access_key_id: 'AKIAIOSFODNN7EXAMPLE', secret_access_key: 'local-secret' };
  const sqs = (app: string, queue: string) => ({
    type: 'aws_sqs',
    queue_url: `https://sqs.eu-west-1.amazonaws.com/123456789012/${app}-${queue}`,
    ...aws,
  });
  const queue = (account: string) => ({
    type: 'cloudflare_queue',
    account_id: account.repeat(32),
    queue_id: 'f'.repeat(32),
    api_token: 'cf-token',
  });
  const destination = (value: Record<string, unknown>) => ({ url: undefined, destination: value });

  it("is its API's: two SQS queues of a region, or Cloudflare queues of two accounts, share one; Pub/Sub and EventBridge are alone", async () => {
    const app = freshApp();
    const first = await register(app, destination(sqs(app, 'one')));
    const second = await register(app, destination(sqs(app, 'two')));
    const pubsub = await register(
      app,
      destination({
        type: 'gcp_pubsub',
        topic: `projects/project-one/topics/${app}`,
        service_account_key: SA_KEY,
      }),
    );
    const bus = await register(
      app,
      destination({ type: 'aws_eventbridge', region: 'eu-west-1', event_bus: app, source: 'com.example.nft', ...aws }),
    );
    const accountA = await register(app, destination(queue('a')));
    const accountB = await register(app, destination(queue('b')));
    receiver();
    await publishEvent(app);
    const alone = async (hooks: { id: string }[]) => Promise.all(hooks.map((h) => aloneAtHost(h.id)));
    expect(await alone([first, second, pubsub, bus, accountA, accountB])).toEqual([
      false,
      false,
      true,
      true,
      false,
      false,
    ]);
    // The shared ones ask for their API host's slots, each host its own schedule; the others ask nothing.
    for (const hook of [first, second, bus, accountA]) await endpointOf(hook.id).deliverDue();
    expect((await hostsAsked(app)).sort()).toEqual([
      'https://api.cloudflare.com',
      'https://sqs.eu-west-1.amazonaws.com',
    ]);
  });
});
