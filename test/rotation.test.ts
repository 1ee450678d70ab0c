// Secret rotation: POST /v1.0/app/nft/webhook/secret, and the two signatures of the 24 hours after.
import { env } from 'cloudflare:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { auditRows, insertWebhook } from './helpers/database';
import { deliverDue, endpointOf } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { expectSecretFail, expectValue, SECRET } from './helpers/replies';
import { fetchAndWait, ORIGIN, postJson, publishDeliveries, registerWebhook } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('POST /v1.0/app/nft/webhook/secret: rotation', () => {
  it('signs with the new and the previous secret for 24 hours, new first, then with the new one only', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const headers = bearer(await tokenFor(app));
    const rotated = await postJson('secret', { webhook_id: hook.id }, headers);
    const { value } = await expectValue<{ secret: string }>(rotated.res);
    expect(value.secret).toMatch(SECRET);
    expect(value.secret).not.toBe(hook.secret);
    const read = await expectValue<{ secret: string }>(
      await fetchAndWait({}, new Request(`${ORIGIN}/v1.0/app/nft/webhook/secret?webhook_id=${hook.id}`, { headers })),
    );
    expect(read.value.secret).toBe(value.secret);

    const { requests } = receiver();
    await publishDeliveries(app);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    const [req] = requests;
    const signatures = req!.headers['webhook-signature']!.split(' ');
    expect(signatures).toHaveLength(2);
    // A receiver that still holds the old secret verifies every request, and so does one with the new.
    expect(new StandardWebhook(hook.secret).verify(req!.body, req!.headers)).toBeTruthy();
    expect(new StandardWebhook(value.secret).verify(req!.body, req!.headers)).toBeTruthy();
    // New first.
    expect(
      new StandardWebhook(value.secret).verify(req!.body, { ...req!.headers, 'webhook-signature': signatures[0]! }),
    ).toBeTruthy();

    // 24 hours on, as D1 says: the endpoint keeps the webhook it read for a minute at most
    // (WEBHOOK_TRUSTED_MS), so this hand edit is told to it, as that minute passing would.
    await env.DB.prepare(`UPDATE webhooks SET previous_secret_until = ?2 WHERE webhook_id = ?1`)
      .bind(hook.id, new Date(Date.now() - 1000).toISOString())
      .run();
    await endpointOf(hook.id).webhookChanged();
    await publishDeliveries(app);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(2);
    const late = requests[1]!;
    expect(late.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(() => new StandardWebhook(hook.secret).verify(late.body, late.headers)).toThrow();
    expect(new StandardWebhook(value.secret).verify(late.body, late.headers)).toBeTruthy();
  });

  it('records the rotation in the audit table without any secret', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const { res } = await postJson(
      'secret',
      { webhook_id: hook.id },
      { ...bearer(await tokenFor(app, { jti: 'rot-1' })), 'x-request-id': 'rotate-1' },
    );
    const { value } = await expectValue<{ secret: string }>(res);
    const audit = await auditRows(hook.id);
    expect(audit.map((a) => [a.action, a.actor, a.actor_jti, a.request_id])).toEqual([
      ['create', app, null, expect.any(String)],
      ['rotate_secret', app, 'rot-1', 'rotate-1'],
    ]);
    const text = JSON.stringify(audit);
    for (const secret of [hook.secret, value.secret]) expect(text).not.toContain(secret.slice(6, 30));
    expect(Object.keys(JSON.parse(audit[1]!.row_before))).not.toContain('secret');
  });

  it('leaves racing rotations coherent: the secret each names signs', async () => {
    const app = freshApp();
    const hook = await registerWebhook(app);
    const headers = bearer(await tokenFor(app));
    const replies = await Promise.all([1, 2].map(() => postJson('secret', { webhook_id: hook.id }, headers)));
    const secrets = await Promise.all(
      replies.map(async ({ res }) => (await expectValue<{ secret: string }>(res)).value.secret),
    );
    const { requests } = receiver();
    await publishDeliveries(app);
    await deliverDue(hook.id);
    expect(requests).toHaveLength(1);
    for (const secret of secrets)
      expect(new StandardWebhook(secret).verify(requests[0]!.body, requests[0]!.headers)).toBeTruthy();
    expect((await auditRows(hook.id)).filter((a) => a.action === 'rotate_secret')).toHaveLength(2);
  });

  it('answers 404 for a foreign webhook and 400 for bad input, with the secret code', async () => {
    const headers = bearer(await tokenFor(freshApp()));
    const foreign = await insertWebhook(freshApp());
    await expectSecretFail((await postJson('secret', { webhook_id: foreign }, headers)).res, 404);
    await expectSecretFail((await postJson('secret', { webhook_id: 'x' }, headers)).res, 400);
    await expectSecretFail((await postJson('secret', '[', headers)).res, 400);
    expect(
      await env.DB.prepare('SELECT secret FROM webhooks WHERE webhook_id = ?1').bind(foreign).first('secret'),
    ).toBeNull();
  });
});
