// docs/openapi.json on recovery: POST /v1.0/app/nft/webhook/recover.
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RECOVER_PATH } from '../src/deliveries/routes';
import { insertWebhook } from './helpers/database';
import { deliverDue, endpointSql, storedDelivery } from './helpers/objects';
import {
  broken,
  expectDocumented,
  expectEachDocumented,
  expectOtherMethodsRefused,
  expectSchemaAgrees,
  limited,
  overloaded,
  postTo,
  putRequest,
  registerAs,
  sizedBody,
} from './helpers/openapi';
import { type Received, receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { eventRequest, fetchAndWait, fetchWith, MAX_BODY_BYTES } from './helpers/requests';
import { bearer, platformToken, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('docs/openapi.json: recovering deliveries', () => {
  let token: string;
  let hook: number;
  let gone: number;
  let off: string;
  let foreign: string;
  /** `recover-gone`'s failed delivery. */
  let failed: string;
  /** Whether `recover-gone` is fixed: until then it answers 410. */
  let fixed = false;
  const answer = (req: Received) =>
    new Response(null, { status: req.url.endsWith('/recover-gone') && !fixed ? 410 : 204 });
  /** Lets the attempt of the recovered delivery, held at the receiver, be answered. */
  let release = () => {};
  const send = (overrides: Record<string, unknown>, headers: Record<string, string>, body: unknown, type?: string) =>
    fetchAndWait(
      overrides,
      postTo(RECOVER_PATH, headers, typeof body === 'string' ? body : JSON.stringify(body), type),
    );
  const at = (msFromNow: number) => new Date(Date.now() + msFromNow).toISOString();
  const hour = 3_600_000;
  const state = async () => {
    const d = await storedDelivery(String(gone), failed);
    return d === undefined ? null : { status: d.status, attempts: d.attempts, schedule_start: d.schedule_start };
  };
  const bookmarked = ['202', '404', '409', '500', '503'];
  beforeAll(async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    token = await tokenFor('app-v');
    hook = await registerAs(token, 'recover');
    gone = await registerAs(token, 'recover-gone');
    off = await insertWebhook('app-v', { enabled: false });
    foreign = await insertWebhook('app-w');

    // `recover-gone` answers 410 until it is fixed: its delivery fails, and the service disables it.
    receiver(answer);
    await expectValue(
      await fetchAndWait(
        {},
        eventRequest({ app_id: 'app-v', type: 'nft.minted', data: {} }, bearer(await platformToken())),
      ),
      202,
    );
    await deliverDue(String(hook), String(gone));
    failed = (
      await endpointSql<{ id: string }>(
        String(gone),
        `SELECT CAST(delivery_id AS TEXT) AS id FROM deliveries WHERE status = 'failed'`,
      )
    )[0]?.id as string;
    expect(failed).toBeDefined();
  });

  it('documents every reply that refuses a recovery, and recovers nothing', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const failures: [string, () => Promise<Response>][] = [
      ['400', () => send({}, bearer(token), { webhook_id: gone, since: 'yesterday' })],
      ['400 no zone', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour).slice(0, 19) })],
      ['400 missing since', () => send({}, bearer(token), { webhook_id: gone })],
      ['400 future', () => send({}, bearer(token), { webhook_id: gone, since: at(hour) })],
      ['400 too old', () => send({}, bearer(token), { webhook_id: gone, since: at(-31 * 24 * hour) })],
      ['400 until', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour), until: at(-2 * hour) })],
      ['400 JSON', () => send({}, bearer(token), '{"webhook_id":')],
      ['401', () => send({}, {}, { webhook_id: gone, since: at(-hour) })],
      ['401 invalid_token', () => send({}, bearer('a.b.c'), { webhook_id: gone, since: at(-hour) })],
      ['404', () => send({}, bearer(token), { webhook_id: foreign, since: at(-hour) })],
      ['409', () => send({}, bearer(token), { webhook_id: off, since: at(-hour) })],
      ['409 disabled by its 410', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour) })],
      ['413', () => send({}, bearer(token), sizedBody(MAX_BODY_BYTES + 1, { webhook_id: gone, since: at(-hour) }))],
      ['415', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour) }, 'text/plain')],
      ['429', () => send(limited, bearer(token), { webhook_id: gone, since: at(-hour) })],
      ['500', () => send({ DB: broken() }, bearer(token), { webhook_id: hook, since: at(-hour) })],
      [
        '500 configuration',
        () => send({ DELIVERY_RETENTION_DAYS: 'a month' }, bearer(token), { webhook_id: hook, since: at(-hour) }),
      ],
      ['503', () => send({ DB: overloaded() }, bearer(token), { webhook_id: hook, since: at(-hour) })],
    ];
    await expectEachDocumented('post', RECOVER_PATH, failures, bookmarked);
    expect(await state()).toEqual({ status: 'failed', attempts: 1, schedule_start: 0 });
  });

  it('documents the 202 of a recovery once the webhook is enabled again, which makes its failed delivery pending', async () => {
    // The endpoint attempts it at once: its receiver holds the reply until the next test.
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const holding = receiver(async (req) => {
      await held;
      return answer(req);
    });
    // Enabled again, the webhook has its failed delivery recovered.
    await expectDocumented(
      await fetchWith({}, putRequest(bearer(token), JSON.stringify({ webhook_id: gone, is_enabled: true }))),
      'put',
    );
    const values = await expectEachDocumented(
      'post',
      RECOVER_PATH,
      [
        ['202', () => send({}, bearer(token), { webhook_id: gone, since: at(-hour) })],
        [
          '202 none, string id and a window',
          () => send({}, bearer(token), { webhook_id: String(hook), since: at(-hour), until: at(hour) }),
        ],
      ],
      bookmarked,
    );
    expect(values.get('202')).toEqual({ deliveries: 1 });
    expect(values.get('202 none, string id and a window')).toEqual({ deliveries: 0 });
    expect(await state()).toEqual({ status: 'pending', attempts: 1, schedule_start: 1 });
    // Due at once: the endpoint's alarm attempts it without being asked (its reply held).
    await vi.waitFor(
      () => expect(holding.requests.map((r) => r.url)).toEqual([`https://hooks.example.com/recover-gone`]),
      {
        timeout: 5_000,
      },
    );
  });

  it('attempts a recovered delivery again', async () => {
    const { requests } = receiver(answer);
    fixed = true;
    release();
    await deliverDue(String(gone));
    // Attempted once: the attempt held since the recovery, answered now, and no other.
    expect(requests).toEqual([]);
    expect(await state()).toEqual({ status: 'succeeded', attempts: 2, schedule_start: 1 });
  });

  it('answers other methods 405', async () => {
    await expectOtherMethodsRefused(RECOVER_PATH, '', ['GET', 'PUT', 'DELETE', 'HEAD'], token);
  });

  it("its recovery schema accepts and refuses the bodies the Worker's recovery does", async () => {
    const id = await insertWebhook('app-recover-schema');
    const off = await insertWebhook('app-recover-schema', { enabled: false, url: 'https://hooks.example.com/off' });
    const hour = 3_600_000;
    const base = Date.now() - 2 * hour;
    const iso = new Date(base).toISOString();
    /** The instant `base` at an offset of `minutes` (+ or -), written with or without its colon. */
    const offset = (minutes: number, colon = true) => {
      const sign = minutes < 0 ? '-' : '+';
      const hh = String(Math.floor(Math.abs(minutes) / 60)).padStart(2, '0');
      const mm = String(Math.abs(minutes) % 60).padStart(2, '0');
      return `${new Date(base + minutes * 60_000).toISOString().slice(0, 19)}${sign}${hh}${colon ? ':' : ''}${mm}`;
    };
    const date = iso.slice(0, 10);
    const yesterday = new Date(Date.now() - 24 * hour).toISOString().slice(0, 10);
    const body = (fields: Record<string, unknown>) => JSON.stringify({ webhook_id: id, ...fields });
    await expectSchemaAgrees('POST', RECOVER_PATH, await tokenFor('app-recover-schema'), [
      body({ since: iso }),
      body({ webhook_id: String(id), since: iso, until: new Date().toISOString(), extra: [1] }),
      body({ since: iso, until: new Date(Date.now() + 24 * hour).toISOString() }),
      body({ since: iso.replace('T', 't').replace('Z', 'z') }),
      body({ since: `${iso.slice(0, 16)}Z` }),
      body({ since: iso.replace('Z', '123456Z') }),
      body({ since: offset(60) }),
      body({ since: offset(60, false) }),
      body({ since: offset(-330) }),
      body({ since: offset(23 * 60 + 59) }),
      body({ webhook_id: off, since: iso }),
      body({ since: `${yesterday}T24:00Z` }),
      body({ since: `${yesterday}T24:00:00.000Z` }),
      body({ webhook_id: 7, since: iso }),
      body({}),
      body({ since: null }),
      body({ since: 5 }),
      body({ since: 'yesterday' }),
      body({ since: date }),
      body({ since: iso.slice(0, 19) }),
      body({ since: iso.replace('T', ' ') }),
      body({ since: iso.replace('Z', '1234567Z') }),
      body({ since: iso.replace(/\.\d+Z$/, '.Z') }),
      body({ since: `${date}T25:00Z` }),
      body({ since: `${date}T10:60Z` }),
      body({ since: `${date}T10:00:60Z` }),
      body({ since: `${yesterday}T24:00:01Z` }),
      body({ since: `${yesterday}T24:00:00.5Z` }),
      body({ since: `${date.slice(0, 4)}-13-01T00:00Z` }),
      body({ since: `${date.slice(0, 8)}32T00:00Z` }),
      body({ since: `${date.slice(0, 8)}00T00:00Z` }),
      body({ since: `${iso.slice(0, 19)}+24:00` }),
      body({ since: `${iso.slice(0, 19)}+01:60` }),
      body({ since: iso, until: null }),
      body({ since: iso, until: 5 }),
      body({ since: iso, until: 'now' }),
      body({ webhook_id: '0', since: iso }),
      body({ webhook_id: null, since: iso }),
      JSON.stringify({ since: iso }),
      '[]',
      'null',
    ]);
  });
});
