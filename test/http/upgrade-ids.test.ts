// The upgrade from the release before (a76dd15, whose delivery ids were 2^62 + …, above 2^53) to
// this tree, over real HTTP on one local state: its deliveries stay addressable by their exact
// digits (in a query; a JSON integer or a string of digits in a resend's body), new ones get ids
// below 2^53 that plain JSON.parse reads, and the log lists the new ones first.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { apiOf } from './api';
import { PATH } from './client';
import { type Receiver, startReceiver, until } from './receiver';
import { unpackRelease } from './release';
import { type Dev, freePort, startWranglerDev, wranglerAsync, writeDevVars } from './wrangler-dev';

/** The release before: the last of main before ids moved below 2^53. */
const RELEASE = 'a76dd15';
const root = new URL('../..', import.meta.url).pathname;
const folder = mkdtempSync(join(tmpdir(), 'nft-webhook-upgrade-ids-'));
let dev: Dev | undefined;
let receiver: Receiver | undefined;
afterAll(async () => {
  await dev?.stop();
  await receiver?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** The delivery ids of a reply, with their exact digits, in order. */
const idsIn = (text: string) => [...text.matchAll(/"delivery_id":(\d+)/g)].map((m) => m[1] as string);

describe(`the upgrade from ${RELEASE} (ids from 2^62) to this release (ids below 2^53)`, () => {
  it('reads the release before’s deliveries by their digits, resends them, and lists them after the new ones', async (context) => {
    const release = unpackRelease(RELEASE, folder, context);
    const state = join(folder, 'state');
    await wranglerAsync(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', state], release);
    await wranglerAsync(['d1', 'migrations', 'apply', 'DB', '--local', '--persist-to', state]);
    const port = await freePort();
    receiver = await startReceiver(port);
    const secret = randomBytes(32).toString('base64url');
    const envFile = join(folder, 'upgrade.vars');
    writeDevVars(envFile, {
      JWT_SECRET: secret,
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_URL_ALLOWED_ORIGINS: `http://127.0.0.1:${port}`,
    });
    const app = `upgrade-ids-${randomBytes(3).toString('hex')}`;

    // ---- the release before ----
    dev = await startWranglerDev({ cwd: release, persistTo: state, envFile, logFile: join(folder, 'release.log') });
    const old = apiOf(dev.baseUrl, secret);
    const hook = await old.register(app, receiver.url('/hook'));
    const oldEvent = await old.publish(app, 'NEW_NFT', '{"token_id":"1"}', 'old-1');
    await receiver.waitFor('/hook', 1);
    const oldLog = await until(
      () => 'the release before recorded its delivery',
      async () => {
        const res = await old.call('GET', `${PATH}/delivery?webhook_id=${hook.id}`, app);
        return res.text.includes('"status":"succeeded"') ? res.text : undefined;
      },
      20_000,
      250,
    );
    const [wide] = idsIn(oldLog);
    expect(BigInt(wide as string)).toBeGreaterThanOrEqual(2n ** 62n);
    await dev.stop();
    dev = undefined;

    // ---- this tree on the same state ----
    dev = await startWranglerDev({ cwd: root, persistTo: state, envFile, logFile: join(folder, 'this.log') });
    const api = apiOf(dev.baseUrl, secret);
    const one = await api.call('GET', `${PATH}/delivery?delivery_id=${wide}`, app);
    expect(one.status, one.text).toBe(200);
    expect(one.text).toContain(`"delivery_id":${wide},"event_id":"${oldEvent}"`);

    const made: string[] = [];
    for (const body of [`{"delivery_id":${wide}}`, `{"delivery_id":"${wide}"}`]) {
      const res = await api.call('POST', `${PATH}/delivery/resend`, app, body);
      expect(res.status, res.text).toBe(202);
      const id = (JSON.parse(res.text) as { value: { delivery_id: number } }).value.delivery_id;
      expect(Number.isSafeInteger(id)).toBe(true);
      made.push(String(id));
    }
    const fresh = await api.publish(app, 'MOD_NFT', '{"token_id":"2"}', 'new-1');
    await receiver.waitFor('/hook', 4);
    expect(receiver.requests('/hook').map((r) => r.headers['webhook-id'])).toEqual([
      oldEvent,
      oldEvent,
      oldEvent,
      fresh,
    ]);
    // Newest first: this release's three (the resends, the new event), then the release before's.
    const log = await until(
      () => 'four deliveries logged',
      async () => {
        const res = await api.call('GET', `${PATH}/delivery?webhook_id=${hook.id}`, app);
        return idsIn(res.text).length === 4 ? res.text : undefined;
      },
      20_000,
      250,
    );
    const listed = idsIn(log);
    expect(listed[3]).toBe(wide);
    expect(
      listed
        .slice(0, 3)
        .map(BigInt)
        .every((id) => id <= BigInt(Number.MAX_SAFE_INTEGER)),
    ).toBe(true);
    expect(new Set(listed.slice(0, 3))).toEqual(new Set([...made, listed[0]]));
    // The new event's journey; an event of the release before carries no trace of its deliveries.
    const journey = await api.call('GET', `/v1.0/app/nft/event?event_id=${fresh}`, app);
    expect(journey.status, journey.text).toBe(200);
    expect((await api.call('GET', `/v1.0/app/nft/event?event_id=${oldEvent}`, app)).status).toBe(404);
  }, 240_000);
});
