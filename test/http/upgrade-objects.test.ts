// The upgrade stop over real HTTP: the release before this one (6569f6d, the release that moved
// D1's deliveries into the Durable Objects) keeps working while the deploy is under way, and this
// release takes over its objects. In the deploy's order, on one local state:
//   1. the release before, on a database its own migrations made, and this tree's pre-deploy
//      migrations applied (migrations/; the post-deploy drop not yet): it publishes, delivers (one
//      delivery succeeded, one pending at a receiver that is down) and shows its log;
//   2. the post-deploy step (scripts/post-deploy.mjs): D1's old tables go;
//   3. this tree's Worker on the same state: the log reads as before, the pending delivery is sent
//      once (its object's alarm, set by the release before), an id published before is the same
//      event, and new events are delivered.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Api, apiOf, d1Of, type LoggedDelivery, logUntil as logUntilOf } from './api';
import { type Receiver, sleep, startReceiver } from './receiver';
import { unpackRelease } from './release';
import { type Dev, freePort, postDeployLocal, startWranglerDev, wranglerAsync, writeDevVars } from './wrangler-dev';

/** The release before: the last of main before the move was retired. */
const RELEASE = '6569f6d';
const root = new URL('../..', import.meta.url).pathname;
/** A failed attempt is retried 25 s later: the delivery to the receiver that is down stays pending until this tree runs. */
const SCHEDULE = '25s 1s';
/** After the request that shows the sending has passed a point, how long a request that should not come is given. */
const GRACE_MS = 2000;
const OLD_TABLES = `SELECT name FROM sqlite_master WHERE type = 'table'
  AND name IN ('events', 'deliveries', 'delivery_attempts', 'delivery_stats') ORDER BY name`;

const folder = mkdtempSync(join(tmpdir(), 'nft-webhook-upgrade-stop-'));
let dev: Dev | undefined;
const receivers: Receiver[] = [];
afterAll(async () => {
  await dev?.stop();
  await Promise.all(receivers.map((r) => r.close()));
  rmSync(folder, { recursive: true, force: true });
});

const logUntil = (api: Api, appId: string, webhookId: number, what: string, done: (l: LoggedDelivery[]) => boolean) =>
  logUntilOf(api, appId, webhookId, what, done, 40_000);

/** Every delivery of the webhook with its attempt log, oldest first. */
async function fullLog(api: Api, appId: string, webhookId: number): Promise<LoggedDelivery[]> {
  const page = await api.deliveries(appId, webhookId);
  const full = await Promise.all(page.map((d) => api.delivery(appId, d.delivery_id)));
  return (full as LoggedDelivery[]).sort((a, b) => Number(BigInt(a.delivery_id) - BigInt(b.delivery_id)));
}

describe(`the upgrade stop from ${RELEASE} (the move) to this release (the move retired)`, () => {
  it('the release before works between the migrations and the drop; after the drop this tree serves and sends its objects, nothing lost or twice', async (context) => {
    const release = unpackRelease(RELEASE, folder, context);
    const state = join(folder, 'state');
    const sql = d1Of(state);
    const made = await wranglerAsync(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', state], release);
    expect(made).toMatch(/0005_objects\.sql/);
    // The deploy's first step: this tree's migrations (before the code). The drop is not among them.
    await wranglerAsync(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', state]);
    expect((await sql(OLD_TABLES))[0]?.map((r) => r.name)).toEqual([
      'deliveries',
      'delivery_attempts',
      'delivery_stats',
      'events',
    ]);

    const upPort = await freePort();
    const downPort = await freePort();
    const up = await startReceiver(upPort);
    receivers.push(up);
    const secret = randomBytes(32).toString('base64url');
    const envFile = join(folder, 'upgrade.vars');
    writeDevVars(envFile, {
      JWT_SECRET: secret,
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_URL_ALLOWED_ORIGINS: `http://127.0.0.1:${upPort} http://127.0.0.1:${downPort}`,
      DELIVERY_RETRY_SCHEDULE: SCHEDULE,
      DELIVERY_TIMEOUT_SECONDS: '2',
    });

    // ---- 1. the release before, while the deploy is under way ----
    dev = await startWranglerDev({ cwd: release, persistTo: state, envFile, logFile: join(folder, 'release.log') });
    const old = apiOf(dev.baseUrl, secret);
    const suffix = randomBytes(3).toString('hex');
    const [okApp, downApp] = [`stop-ok-${suffix}`, `stop-down-${suffix}`];
    const ok = await old.register(okApp, up.url('/ok'));
    const down = await old.register(downApp, `http://127.0.0.1:${downPort}/down`);
    const okEvent = await old.publish(okApp, 'NEW_NFT', '{"token_id":"1"}', 'ok-1');
    const downEvent = await old.publish(downApp, 'NEW_NFT', '{"token_id":"2"}', 'down-1');
    await up.waitFor('/ok', 1);
    await logUntil(old, okApp, ok.id, 'the ok delivery succeeded', (l) => l[0]?.status === 'succeeded');
    await logUntil(old, downApp, down.id, 'one refused attempt', (l) => l[0]?.attempts === 1);
    const before = { ok: await fullLog(old, okApp, ok.id), down: await fullLog(old, downApp, down.id) };
    await dev.stop();
    dev = undefined;
    expect(before.ok.map((d) => [d.event_id, d.status, d.attempts])).toEqual([[okEvent, 'succeeded', 1]]);
    expect(before.down.map((d) => [d.event_id, d.status, d.attempts, d.last_error])).toEqual([
      [downEvent, 'pending', 1, 'connection'],
    ]);
    // It wrote nothing to D1's old tables: the drop loses nothing.
    const [counts] = await sql(
      `SELECT (SELECT COUNT(*) FROM events) + (SELECT COUNT(*) FROM deliveries) + (SELECT COUNT(*) FROM delivery_attempts)
         + (SELECT COUNT(*) FROM delivery_stats) AS n`,
    );
    expect(counts).toEqual([{ n: 0 }]);

    // ---- 2. the post-deploy step, once the new code is live ----
    expect(await postDeployLocal(state)).toContain('0001_drop_moved_tables.sql');
    expect((await sql(OLD_TABLES))[0]).toEqual([]);

    // ---- 3. this tree on the same state; the receiver that was down is up ----
    const downReceiver = await startReceiver(downPort);
    receivers.push(downReceiver);
    dev = await startWranglerDev({ cwd: root, persistTo: state, envFile, logFile: join(folder, 'this.log') });
    const api = apiOf(dev.baseUrl, secret);
    // As the release before showed it, plus what this release adds to one delivery's read: the
    // body its request carried.
    const now = await fullLog(api, okApp, ok.id);
    expect(now.map(({ payload, ...rest }) => rest)).toEqual(before.ok);
    expect(JSON.parse(String(now[0]?.payload))).toMatchObject({ type: 'NEW_NFT' });
    // The pending delivery: its alarm (set by the release before) sends it, once, as the same event.
    const [arrived] = await downReceiver.waitFor('/down', 1, 40_000);
    expect(arrived?.headers['webhook-id']).toBe(downEvent);
    const [after] = await logUntil(api, downApp, down.id, 'the pending delivery succeeded', (l) =>
      l.every((d) => d.status === 'succeeded'),
    ).then(() => fullLog(api, downApp, down.id));
    expect(after).toMatchObject({
      delivery_id: before.down[0]?.delivery_id,
      event_id: downEvent,
      attempts: 2,
      last_status: 204,
    });
    expect(after?.attempt_log?.[0]).toEqual(before.down[0]?.attempt_log?.[0]);
    // An id published under the release before is the same event; a new one is delivered.
    expect(await api.publish(okApp, 'NEW_NFT', '{"token_id":"1"}', 'ok-1')).toBe(okEvent);
    const fresh = await api.publish(okApp, 'MOD_NFT', '{"token_id":"1"}', 'ok-2');
    await up.waitFor('/ok', 2);
    await sleep(GRACE_MS);
    expect(up.requests('/ok').map((r) => r.headers['webhook-id'])).toEqual([okEvent, fresh]);
    expect(downReceiver.requests('/down').map((r) => r.headers['webhook-id'])).toEqual([downEvent]);
  }, 240_000);
});
