// The key ring that seals signing secrets at rest: WEBHOOK_SECRET_KEYS (the first key seals, every
// one opens), WEBHOOK_SECRET_KEY alone as the key `default`, the Cron Trigger's re-sealing after a
// new key is put first, and secrets that no configured key opens.
import { createScheduledController, env, runInDurableObject } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import worker from '../src/index';
import { openSecret, sealedPrefix, sealSecret, secretKeys } from '../src/webhooks/secrets';
import { storeResealed, webhooksSealedWith } from '../src/webhooks/store/sealed';
import { deliverDue, endpointOf, storedAttempts, storedDelivery } from './helpers/objects';
import { type Received, receiver } from './helpers/receiver';
import { expectCreateFail, expectSecretFail, expectValue, SECRET } from './helpers/replies';
import {
  fetchAndWait,
  post,
  postJson,
  postRequest,
  publishEvent,
  registerWebhook,
  secretRequest,
} from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

const OLD = env.WEBHOOK_SECRET_KEY as string;
const randomKey = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
const NEW = randomKey();
const NEW_ID = '2026-11';
/** The rotation's first step: the new key put first, the old one still there to open. */
const RING = { WEBHOOK_SECRET_KEYS: `${NEW_ID}:${NEW}`, WEBHOOK_SECRET_KEY: OLD };
/** Its last step: the old key removed. */
const NEW_ONLY = { WEBHOOK_SECRET_KEYS: `${NEW_ID}:${NEW}`, WEBHOOK_SECRET_KEY: '' };

const used = new Set<string>();
afterEach(async () => {
  for (const id of used) await runInDurableObject(endpointOf(id), (_, state) => state.storage.deleteAlarm());
  used.clear();
  vi.restoreAllMocks();
});

/** The key ring of `settings` (as a Worker with them would read it). */
const ringOf = (settings: Record<string, string>) => secretKeys({ ...env, ...settings } as CloudflareBindings);

/** Gives endpoints' objects these settings from now on, as a deploy of them would. */
const OWN = Symbol("the object's own env");
async function useSettings(ids: string[], settings: Record<string, string>) {
  for (const id of ids) {
    used.add(id);
    await runInDurableObject(endpointOf(id), (instance) => {
      const object = instance as unknown as { env: CloudflareBindings; [OWN]?: CloudflareBindings };
      object[OWN] ??= object.env;
      object.env = { ...object[OWN], ...settings } as CloudflareBindings;
    });
  }
}

const storedSecret = (id: string) =>
  env.DB.prepare('SELECT secret, previous_secret FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)')
    .bind(id)
    .first<{ secret: string; previous_secret: string | null }>();

/** Runs the Cron Trigger with `settings`; returns its log lines. */
async function cronRun(settings: Record<string, string>) {
  const info = vi.spyOn(console, 'info');
  await worker.scheduled(createScheduledController({ cron: '* * * * *' }), {
    ...env,
    ...settings,
  } as unknown as CloudflareBindings);
  const lines = info.mock.calls.map((c) => JSON.parse(String(c[0])));
  info.mockRestore();
  return lines;
}

const resealedRows = (lines: { msg: string; rows?: number }[]) =>
  lines.find((l) => l.msg === 'cron: signing secrets re-sealed')?.rows;

describe('the key ring: WEBHOOK_SECRET_KEYS and WEBHOOK_SECRET_KEY', () => {
  it('seals with the first key (its id in the stored form) and opens with any; WEBHOOK_SECRET_KEY is the key default', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    // WEBHOOK_SECRET_KEY alone: the stored form of the releases before the ring.
    const single = await expectValue<{ webhook_id: number; secret: string }>(
      await post({ url: `https://${app}.example.com/single` }, headers),
      201,
    );
    expect((await storedSecret(String(single.value.webhook_id)))!.secret).toMatch(/^v1\.[A-Za-z0-9+/]+=*$/);
    // The ring: sealed with 2026-11, and both secrets read with it.
    const ringed = await expectValue<{ webhook_id: number; secret: string }>(
      await fetchAndWait(RING, postRequest({ url: `https://${app}.example.com/ring` }, headers)),
      201,
    );
    expect(ringed.value.secret).toMatch(SECRET);
    expect((await storedSecret(String(ringed.value.webhook_id)))!.secret).toMatch(/^v2\.2026-11\.[A-Za-z0-9+/]+=*$/);
    for (const { value } of [single, ringed]) {
      const read = await expectValue<{ secret: string }>(
        await fetchAndWait(RING, secretRequest(`webhook_id=${value.webhook_id}`, headers)),
      );
      expect(read.value.secret).toBe(value.secret);
    }
    // The key default may be named in WEBHOOK_SECRET_KEYS itself.
    const named = { WEBHOOK_SECRET_KEYS: `${NEW_ID}:${NEW} default:${OLD}`, WEBHOOK_SECRET_KEY: '' };
    const read = await expectValue<{ secret: string }>(
      await fetchAndWait(named, secretRequest(`webhook_id=${single.value.webhook_id}`, headers)),
    );
    expect(read.value.secret).toBe(single.value.secret);
  });

  it.each([
    ['an entry without an id', `${NEW}`],
    ['an id with a dot', `a.b:${NEW}`],
    ['a key of 16 bytes', `k1:${btoa('0123456789abcdef')}`],
    ['a key that is not base64', 'k1:not-base64!'],
    ['an id named twice', `k1:${NEW} k1:${OLD}`],
    ['the key default, other than WEBHOOK_SECRET_KEY', `k1:${NEW} default:${NEW}`],
  ])(
    'fails closed on WEBHOOK_SECRET_KEYS with %s: 500, nothing registered, the log names the setting',
    async (_, keys) => {
      const error = vi.spyOn(console, 'error').mockImplementation(() => {});
      const app = freshApp();
      const res = await fetchAndWait(
        { WEBHOOK_SECRET_KEYS: keys, WEBHOOK_SECRET_KEY: OLD },
        postRequest({ url: `https://${app}.example.com/h` }, bearer(await tokenFor(app))),
      );
      await expectCreateFail(res, 500);
      expect(await env.DB.prepare('SELECT COUNT(*) AS n FROM webhooks WHERE app_id = ?1').bind(app).first('n')).toBe(0);
      const lines = error.mock.calls.map((c) => JSON.parse(String(c[0])));
      expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/^configuration error: WEBHOOK_SECRET_KEYS: /)]);
    },
  );

  it('fails closed when neither WEBHOOK_SECRET_KEYS nor WEBHOOK_SECRET_KEY is set', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    const res = await fetchAndWait(
      { WEBHOOK_SECRET_KEYS: '', WEBHOOK_SECRET_KEY: '' },
      postRequest({ url: `https://${app}.example.com/h` }, bearer(await tokenFor(app))),
    );
    await expectCreateFail(res, 500);
    expect(JSON.parse(String(error.mock.calls[0]![0])).msg).toBe(
      'configuration error: WEBHOOK_SECRET_KEYS: is not set (nor is WEBHOOK_SECRET_KEY)',
    );
  });
});

describe('a stored secret that no configured key opens', () => {
  it('makes its deliveries wait, without a request, with a log line naming the key id; reading it is a 500 naming it', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = freshApp();
    const hook = await registerWebhook(app);
    const other = { WEBHOOK_SECRET_KEYS: `k3:${randomKey()}`, WEBHOOK_SECRET_KEY: '' };
    await useSettings([hook.id], other);
    const { requests } = receiver();
    const { deliveryIds } = await publishEvent(app);
    await deliverDue(hook.id);
    expect(requests).toEqual([]);
    expect(await storedDelivery(hook.id, deliveryIds[0]!)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await storedAttempts(hook.id, deliveryIds[0]!)).toEqual([]);
    const waits = error.mock.calls.map((c) => JSON.parse(String(c[0]))).filter((l) => l.key_id !== undefined);
    expect(waits[0]).toMatchObject({
      msg: 'configuration error: WEBHOOK_SECRET_KEYS: has no key default, which sealed a stored signing secret; the delivery waits',
      key_id: 'default',
      webhook_id: hook.id,
      delivery_id: deliveryIds[0],
    });

    error.mockClear();
    const res = await fetchAndWait(other, secretRequest(`webhook_id=${hook.id}`, bearer(await tokenFor(app))));
    await expectSecretFail(res, 500);
    expect(error.mock.calls.some((c) => String(c[0]).includes('has no key default'))).toBe(true);

    // The key back in the ring: the delivery is sent, signed with the webhook's secret.
    await useSettings([hook.id], RING);
    await runInDurableObject(endpointOf(hook.id), (_, state) =>
      state.storage.sql.exec('UPDATE deliveries SET next_attempt_at = ?1', new Date().toISOString()),
    );
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    expect(new StandardWebhook(hook.secret).verify(requests[0]!.body, requests[0]!.headers)).toBeTruthy();
  });
});

describe('the Cron Trigger re-seals every stored secret after a new key is put first', () => {
  it('over 2,500 webhooks in bounded runs (2,000 a run), every delivery signed with the right secret throughout', async () => {
    const old = await ringOf({ WEBHOOK_SECRET_KEY: OLD });
    // 2,480 webhooks inserted as a database of the release before holds them (a hundred of them
    // with a previous secret still signing), and 20 registered through the API, whose endpoints send.
    const bulkApp = freshApp();
    const plain = new Map<string, { secret: string; previous: string | null }>();
    const rows = [];
    for (let i = 0; i < 2480; i++) {
      const secret = `whsec_${btoa(`bulk-secret-${String(i).padStart(20, '0')}`)}`;
      const previous = i < 100 ? `whsec_${btoa(`bulk-previous-${String(i).padStart(18, '0')}`)}` : null;
      rows.push({
        url: `https://${bulkApp}.example.com/${i}`,
        secret: await sealSecret(old, secret),
        previous: previous === null ? null : await sealSecret(old, previous),
        plain: { secret, previous },
      });
    }
    const inserted = await env.DB.prepare(
      `INSERT INTO webhooks (app_id, url, secret, previous_secret, previous_secret_until)
       SELECT ?1, r.value->>'$.url', r.value->>'$.secret', r.value->>'$.previous',
         CASE WHEN r.value->>'$.previous' IS NULL THEN NULL ELSE '2999-01-01T00:00:00.000Z' END
       FROM json_each(?2) AS r
       RETURNING CAST(webhook_id AS TEXT) AS id, url`,
    )
      .bind(bulkApp, JSON.stringify(rows.map(({ plain: _, ...r }) => r)))
      .all<{ id: string; url: string }>();
    for (const { id, url } of inserted.results) plain.set(id, rows[Number(url.split('/').at(-1))]!.plain);

    const app = freshApp();
    const hooks: { id: string; secret: string }[] = [];
    for (let i = 0; i < 20; i++) hooks.push(await registerWebhook(app, { url: `https://${app}.example.com/${i}` }));
    for (const hook of hooks) plain.set(hook.id, { secret: hook.secret, previous: null });
    expect(plain.size).toBe(2500);
    const { requests } = receiver();

    /** Publishes one event; every endpoint sends it; each request verifies with its webhook's secret only. */
    async function everyDeliverySigned() {
      requests.length = 0;
      await publishEvent(app);
      await deliverDue(...hooks.map((h) => h.id));
      expect(requests).toHaveLength(hooks.length);
      for (const req of requests as Received[]) {
        const hook = hooks[Number(new URL(req.url).pathname.slice(1))]!;
        expect(new StandardWebhook(hook.secret).verify(req.body, req.headers)).toBeTruthy();
        const another = hooks.find((h) => h !== hook)!;
        expect(() => new StandardWebhook(another.secret).verify(req.body, req.headers)).toThrow();
      }
    }

    // Rows sealed with the old key: these 2,500 and the earlier tests' few.
    const oldRows = await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM webhooks WHERE secret LIKE 'v1.%' OR previous_secret LIKE 'v1.%'",
    ).first<number>('n');
    expect(oldRows).toBeGreaterThanOrEqual(2500);
    expect(oldRows).toBeLessThan(2510);

    // The deploy of the new ring; then the Cron Trigger's runs, deliveries between each.
    await useSettings(
      hooks.map((h) => h.id),
      RING,
    );
    await everyDeliverySigned();
    const counts = [];
    let done = false;
    for (let run = 0; run < 4 && !done; run++) {
      const lines = await cronRun(RING);
      counts.push(resealedRows(lines));
      done = lines.some((l) =>
        l.msg.startsWith('cron: every stored signing secret the key ring opens is sealed with key 2026-11'),
      );
      await everyDeliverySigned();
    }
    // At most 2,000 a run; the run that finds fewer says that the old key can go, and the next has nothing to do.
    expect(counts).toEqual([2000, oldRows! - 2000]);
    expect(resealedRows(await cronRun(RING))).toBe(0);
    const all = await env.DB.prepare(
      'SELECT CAST(webhook_id AS TEXT) AS id, secret, previous_secret FROM webhooks WHERE secret IS NOT NULL',
    ).all<{ id: string; secret: string; previous_secret: string | null }>();
    const newOnly = await ringOf(NEW_ONLY);
    let checked = 0;
    for (const row of all.results) {
      expect(row.secret.startsWith('v2.2026-11.')).toBe(true);
      const expected = plain.get(row.id);
      if (expected === undefined) continue;
      expect(await openSecret(newOnly, row.secret)).toBe(expected.secret);
      if (expected.previous === null) expect(row.previous_secret).toBeNull();
      else expect(await openSecret(newOnly, row.previous_secret!)).toBe(expected.previous);
      checked++;
    }
    expect(checked).toBe(2500);

    // The old key removed: still every delivery signed, and the Cron Trigger reads nothing.
    await useSettings(
      hooks.map((h) => h.id),
      NEW_ONLY,
    );
    await everyDeliverySigned();
    expect(resealedRows(await cronRun(NEW_ONLY))).toBe(0);
  }, 60_000);

  it('never overwrites a secret rotated between its read and its write: the next run re-seals the new one', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const ring = await ringOf(RING);
    const [read] = (await webhooksSealedWith(env.DB, [sealedPrefix('default')], 10_000)).filter(
      (w) => w.id === hook.id,
    );
    expect(read).toBeDefined();
    // A rotation lands meanwhile (sealed with the new key, the old secret now previous).
    const { res } = await postJson('secret', { webhook_id: hook.id }, bearer(await tokenFor(app)), RING);
    const rotated = (await expectValue<{ secret: string }>(res)).value.secret;
    const after = (await storedSecret(hook.id))!;
    const stale = {
      id: hook.id,
      secret: await sealSecret(ring, hook.secret),
      previous_secret: null,
      credentials: null,
      sensitive: null,
    };
    expect(await storeResealed(env.DB, [{ was: read!, now: stale }], [])).toBe(0);
    expect(await storedSecret(hook.id)).toEqual(after);
    expect(await openSecret(ring, after.secret)).toBe(rotated);
    // The next run re-seals what is there now: the previous secret, sealed with the old key.
    await cronRun(RING);
    const now = (await storedSecret(hook.id))!;
    expect(now.secret).toBe(after.secret);
    expect(now.previous_secret).toMatch(/^v2\.2026-11\./);
    expect(await openSecret(ring, now.previous_secret!)).toBe(hook.secret);
  });

  it("re-seals an Idempotency-Key's secret too: its replay shows the same secret once the old key is gone", async () => {
    const app = freshApp();
    const headers = { ...bearer(await tokenFor(app)), 'idempotency-key': 'ring-replay' };
    const body = { url: `https://${app}.example.com/replay` };
    const first = await expectValue<{ secret: string }>(await post(body, headers), 201);
    await cronRun(RING);
    await cronRun(RING);
    const replay = await fetchAndWait(NEW_ONLY, postRequest(body, headers));
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await expectValue<{ secret: string }>(replay, 201)).value.secret).toBe(first.value.secret);
  });
});

describe('re-sealing destinations’ credentials and sensitive headers', () => {
  it('re-seals them with the ring’s first key, and they still open to what was sent', async () => {
    const app = freshApp();
    const headers = bearer(await tokenFor(app));
    const queue = {
      type: 'cloudflare_queue',
      account_id: '0123456789abcdef0123456789abcdef',
      queue_id: 'fedcba9876543210fedcba9876543210',
      api_token: 'cf-token-to-reseal',
    };
    const withQueue = await expectValue<{ webhook_id: number }>(await post({ destination: queue }, headers), 201);
    const withHeaders = await expectValue<{ webhook_id: number }>(
      await post(
        {
          url: `https://${app}.example.com/h`,
          headers: { Authorization: 'Bearer gateway-secret' },
          sensitive_headers: ['Authorization'],
        },
        headers,
      ),
      201,
    );
    const sealedOf = async (id: number) =>
      (await env.DB.prepare(
        `SELECT json_extract(destination, '$.sealed') AS credentials, json_extract(headers, '$.sealed') AS sensitive
         FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)`,
      )
        .bind(String(id))
        .first<{ credentials: string | null; sensitive: string | null }>())!;
    expect((await sealedOf(withQueue.value.webhook_id)).credentials).toMatch(/^v1\./);
    expect((await sealedOf(withHeaders.value.webhook_id)).sensitive).toMatch(/^v1\./);
    // Runs until nothing sealed with the old key is left (other tests' rows included).
    for (let run = 0; run < 20; run++) if (resealedRows(await cronRun(RING)) === undefined) break;
    const ring = await ringOf(NEW_ONLY);
    const credentials = (await sealedOf(withQueue.value.webhook_id)).credentials!;
    const sensitive = (await sealedOf(withHeaders.value.webhook_id)).sensitive!;
    expect(credentials).toMatch(/^v2\.2026-11\./);
    expect(sensitive).toMatch(/^v2\.2026-11\./);
    expect(JSON.parse(await openSecret(ring, credentials))).toEqual({ api_token: 'cf-token-to-reseal' });
    expect(JSON.parse(await openSecret(ring, sensitive))).toEqual({ Authorization: 'Bearer gateway-secret' });
    // The rest of the row is as it was.
    const row = await env.DB.prepare('SELECT destination FROM webhooks WHERE webhook_id = CAST(?1 AS INTEGER)')
      .bind(String(withQueue.value.webhook_id))
      .first<{ destination: string }>();
    expect(JSON.parse(row!.destination)).toEqual({
      type: 'cloudflare_queue',
      account_id: queue.account_id,
      queue_id: queue.queue_id,
      sealed: credentials,
    });
  });
});
