// The in-place upgrade to the Durable Objects, over real HTTP: the release before this change
// (ee6493b: events, deliveries and attempts in D1, a deliveries queue) runs under `wrangler dev`
// on its own migrations and leaves succeeded, failed and pending deliveries in D1; then this tree's
// migrations are applied to the same local state, this tree's Worker starts on it, and its Cron
// Trigger (GET /__scheduled) moves the rows into the objects. The delivery log reads the same
// after the move, each pending delivery is sent once, and the moved deliveries can be recovered
// and resent.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Api, apiOf, d1Of, type LoggedDelivery, logUntil as logUntilOf } from './api';
import { type Receiver, sleep, startReceiver } from './receiver';
import { unpackRelease } from './release';
import { type Dev, freePort, startWranglerDev, wranglerAsync, writeDevVars } from './wrangler-dev';

/** The release before the move to the Durable Objects. */
const RELEASE = 'ee6493b';
const root = new URL('../..', import.meta.url).pathname;
/** Short, so the move's wait after a claim ((2 x 1 + 30) s) fits in a test. */
const TIMEOUT_SECONDS = 1;
/**
 * A failed attempt is retried 1 s later, then 20 s later: three attempts at most. The receiver
 * that answers 500 fails in about 21 s; the one that is down is left pending (two attempts, its
 * third due 20 s later) when the release before stops.
 */
const SCHEDULE = '1s 20s';
/** After the request that shows the sending has passed a point, how long a request that should not come is given. */
const GRACE_MS = 2000;

const folder = mkdtempSync(join(tmpdir(), 'nft-webhook-objects-'));
let dev: Dev | undefined;
const receivers: Receiver[] = [];
afterAll(async () => {
  await dev?.stop();
  await Promise.all(receivers.map((r) => r.close()));
  rmSync(folder, { recursive: true, force: true });
});

/** Polls the log of `webhookId` until `done`. */
const logUntil = (api: Api, appId: string, webhookId: number, what: string, done: (l: LoggedDelivery[]) => boolean) =>
  logUntilOf(api, appId, webhookId, what, done, 40_000);

/** Every delivery of the webhook with its attempt log, oldest first. */
async function fullLog(api: Api, appId: string, webhookId: number): Promise<LoggedDelivery[]> {
  const page = await api.deliveries(appId, webhookId);
  const full = await Promise.all(page.map((d) => api.delivery(appId, d.delivery_id)));
  return (full as LoggedDelivery[]).sort((a, b) => Number(BigInt(a.delivery_id) - BigInt(b.delivery_id)));
}

describe(`the upgrade from ${RELEASE} (deliveries in D1) to the Durable Objects`, () => {
  it('moves the deliveries the release before left in D1: the log reads the same, pending ones are sent once, recover and resend work, a repeated id is the same event', async (context) => {
    // The release's tree, with this checkout's packages.
    const release = unpackRelease(RELEASE, folder, context);

    const state = join(folder, 'state');
    const sql = d1Of(state);
    const made = await wranglerAsync(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', state], release);
    expect(made).toMatch(/0004_portal\.sql/);
    expect(made).not.toMatch(/0005_/);

    // One receiver that answers (200 on /ok, 500 on /bad), and a port nothing listens on yet.
    const upPort = await freePort();
    const downPort = await freePort();
    const up = await startReceiver(upPort);
    receivers.push(up);
    up.answer('/bad', () => ({ status: 500 }));
    const secret = randomBytes(32).toString('base64url');
    const envFile = join(folder, 'objects.vars');
    writeDevVars(envFile, {
      JWT_SECRET: secret,
      // The same key for both releases: the webhooks' signing secrets are kept encrypted with it.
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_URL_ALLOWED_ORIGINS: `http://127.0.0.1:${upPort} http://127.0.0.1:${downPort}`,
      DELIVERY_RETRY_SCHEDULE: SCHEDULE,
      DELIVERY_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
      DELIVERY_REQUEUE_AFTER_SECONDS: '300',
    });

    // ---- the release before ----
    dev = await startWranglerDev({ cwd: release, persistTo: state, envFile, logFile: join(folder, 'release.log') });
    const old = apiOf(dev.baseUrl, secret);
    const suffix = randomBytes(3).toString('hex');
    const [okApp, badApp, downApp] = ['ok', 'bad', 'down'].map((n) => `objects-${n}-${suffix}`) as [
      string,
      string,
      string,
    ];
    const ok = await old.register(okApp, up.url('/ok'));
    const bad = await old.register(badApp, up.url('/bad'));
    const down = await old.register(downApp, `http://127.0.0.1:${downPort}/down`);

    const okEvents = [
      await old.publish(okApp, 'NEW_NFT', '{"token_id":"1"}', 'ok-1'),
      await old.publish(okApp, 'MOD_NFT', '{"token_id":"1","owner":"0xabc"}', 'ok-2'),
    ];
    const badEvent = await old.publish(badApp, 'NEW_NFT', '{"token_id":"2"}', 'bad-1');
    await up.waitFor('/ok', 2);
    await logUntil(
      old,
      okApp,
      ok.id,
      'both ok deliveries succeeded',
      (l) => l.length === 2 && l.every((d) => d.status === 'succeeded'),
    );
    // Three attempts (1 s, then 20 s apart), then failed.
    await up.waitFor('/bad', 3, 40_000);
    await logUntil(old, badApp, bad.id, 'the bad delivery failed', (l) => l[0]?.status === 'failed');
    // To the receiver that is down: two attempts refused, the third due 20 s later.
    const downEvents = [
      await old.publish(downApp, 'NEW_NFT', '{"token_id":"3"}', 'down-1'),
      await old.publish(downApp, 'NEW_NFT', '{"token_id":"4"}', 'down-2'),
    ];
    await logUntil(
      old,
      downApp,
      down.id,
      'two refused attempts of each pending delivery',
      (l) => l.length === 2 && l.every((d) => d.status === 'pending' && d.attempts === 2),
    );
    const before = {
      ok: await fullLog(old, okApp, ok.id),
      bad: await fullLog(old, badApp, bad.id),
      down: await fullLog(old, downApp, down.id),
    };
    await dev.stop();
    dev = undefined;
    expect(before.ok.map((d) => [d.event_id, d.status, d.attempts])).toEqual(okEvents.map((e) => [e, 'succeeded', 1]));
    expect(before.bad.map((d) => [d.event_id, d.status, d.attempts])).toEqual([[badEvent, 'failed', 3]]);
    expect(before.down.map((d) => [d.event_id, d.status, d.attempts])).toEqual(
      downEvents.map((e) => [e, 'pending', 2]),
    );
    const [counts] = await sql(
      `SELECT (SELECT COUNT(*) FROM events) AS events, (SELECT COUNT(*) FROM deliveries) AS deliveries,
         (SELECT COUNT(*) FROM delivery_attempts) AS attempts`,
    );
    expect(counts).toEqual([{ events: 5, deliveries: 5, attempts: 2 + 3 + 4 }]);

    // ---- the deploy's step: this tree's migrations on the same state ----
    const upgraded = await wranglerAsync(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', state]);
    expect(upgraded).toMatch(/0005_objects\.sql/);

    // ---- this tree's Worker on the same state; the receiver that was down is up now ----
    const downReceiver = await startReceiver(downPort);
    receivers.push(downReceiver);
    dev = await startWranglerDev({ cwd: root, persistTo: state, envFile, logFile: join(folder, 'objects.log') });
    const api = apiOf(dev.baseUrl, secret);
    // Nothing is sent before the move: the deliveries are still in D1.
    await sleep(GRACE_MS);
    expect(downReceiver.requests('/down')).toEqual([]);
    // The first run claims; the move waits (2 x DELIVERY_TIMEOUT_SECONDS + 30) s after the claim.
    await api.scheduled();
    const [claimed] = await sql('SELECT COUNT(*) AS n FROM deliveries WHERE move_claimed_at IS NOT NULL');
    expect(claimed).toEqual([{ n: 5 }]);
    await sleep((2 * TIMEOUT_SECONDS + 30) * 1000 + 1000);
    await api.scheduled();
    const [left] = await sql(
      `SELECT (SELECT COUNT(*) FROM events) AS events, (SELECT COUNT(*) FROM deliveries) AS deliveries,
         (SELECT COUNT(*) FROM delivery_attempts) AS attempts`,
    );
    expect(left).toEqual([{ events: 0, deliveries: 0, attempts: 0 }]);

    // Each pending delivery arrives once, as the same event.
    await downReceiver.waitFor('/down', 2, 20_000);
    const after = {
      ok: await fullLog(api, okApp, ok.id),
      bad: await fullLog(api, badApp, bad.id),
      down: await logUntil(api, downApp, down.id, 'the moved pending deliveries succeeded', (l) =>
        l.every((d) => d.status === 'succeeded'),
      ).then(() => fullLog(api, downApp, down.id)),
    };
    // Ended deliveries read exactly as before, attempt by attempt.
    expect(after.ok).toEqual(before.ok);
    expect(after.bad).toEqual(before.bad);
    // Pending ones: the same ids and attempts, then the one that succeeded.
    expect(after.down.map((d) => [d.delivery_id, d.event_id])).toEqual(
      before.down.map((d) => [d.delivery_id, d.event_id]),
    );
    after.down.forEach((d, i) => {
      const was = before.down[i] as LoggedDelivery;
      expect(d).toMatchObject({
        status: 'succeeded',
        attempts: 3,
        last_status: 204,
        last_error: null,
        next_attempt_at: null,
      });
      expect(d.created_at).toBe(was.created_at);
      expect(d.attempt_log?.slice(0, 2)).toEqual(was.attempt_log);
      expect(d.attempt_log?.[2]).toMatchObject({ attempt: 3, status: 204, error: null });
    });

    // Recover the failed one (the receiver answers now), resend an old succeeded one.
    up.answer('/bad', () => ({ status: 200 }));
    const recovered = await api.call(
      'POST',
      '/v1.0/app/nft/webhook/recover',
      badApp,
      JSON.stringify({ webhook_id: bad.id, since: new Date(Date.now() - 3_600_000).toISOString() }),
    );
    expect(recovered).toEqual({ status: 202, text: '{"return":0,"message":"success","value":{"deliveries":1}}' });
    const [, , , fourth] = await up.waitFor('/bad', 4);
    expect(fourth?.headers['webhook-id']).toBe(badEvent);
    const resent = await api.call(
      'POST',
      '/v1.0/app/nft/webhook/delivery/resend',
      okApp,
      JSON.stringify({ delivery_id: Number(before.ok[0]?.delivery_id) }),
    );
    expect(resent.status, resent.text).toBe(202);
    const [, , third] = await up.waitFor('/ok', 3);
    expect(third?.headers['webhook-id']).toBe(okEvents[0]);
    expect(third?.body.equals((up.requests('/ok')[0] as { body: Buffer }).body)).toBe(true);

    // An id published under the release before is the same event: nothing new is sent.
    expect(await api.publish(okApp, 'NEW_NFT', '{"token_id":"1"}', 'ok-1')).toBe(okEvents[0]);
    expect(await api.publish(downApp, 'NEW_NFT', '{"token_id":"3"}', 'down-1')).toBe(downEvents[0]);
    await sleep(GRACE_MS);
    const ids = (r: Receiver, path: string) => r.requests(path).map((q) => q.headers['webhook-id']);
    expect(ids(up, '/ok')).toEqual([...okEvents, okEvents[0]]);
    expect(ids(up, '/bad')).toEqual([badEvent, badEvent, badEvent, badEvent]);
    expect(ids(downReceiver, '/down').sort()).toEqual([...downEvents].sort());
    expect((await api.deliveries(okApp, ok.id)).length).toBe(3);
  }, 240_000);
});
