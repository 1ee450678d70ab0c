// Edges of destinations beyond HTTP: a reply that quotes a sensitive value in another form keeps
// none of it; a Pub/Sub token request is shared within a pass only, so an object reset while one is
// under way never holds another's pass; a webhook moved to an HTTP endpoint names no API refusal.
import { env, runInDurableObject, SELF } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MASKED } from '../src/core/custom-headers';
import { keptText } from '../src/deliveries/attempt';
import { apis, at, destinations, GOOGLE_TOKEN, SA_KEY } from './helpers/destinations';
import { deliverDue, endpointOf, pendingAt, storedAttempts } from './helpers/objects';
import type { Received } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { get, stoppedAfterEachTest, URL_ } from './helpers/requests';
import { bearer, freshApp, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});
const { register } = stoppedAfterEachTest();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const issuerOf = (req: Received) => {
  const assertion = new URLSearchParams(req.body).get('assertion');
  if (assertion === null) return null;
  return JSON.parse(atob((assertion.split('.')[1] as string).replace(/-/g, '+').replace(/_/g, '/'))).iss as string;
};

describe('a sensitive value quoted by a reply, in another form than it was sent', () => {
  it('masks the credential of an Authorization value when the reply quotes the credential without its scheme', () => {
    const kept = keptText(new TextEncoder().encode('{"error":"unknown token gateway-secret"}'), [
      'Bearer gateway-secret',
    ]);
    expect(kept).not.toContain('gateway-secret');
  });

  it('masks a value the reply quotes JSON-escaped (a value with a double quote or a backslash)', () => {
    const value = 'k3y"with\\quote';
    const reply = JSON.stringify({ received: { 'x-api-key': value } });
    const kept = keptText(new TextEncoder().encode(reply), [value]);
    expect(kept).not.toContain('with');
  });

  it('end to end: an HTTP receiver whose error quotes the bearer token keeps it out of the log', async () => {
    const app = freshApp();
    const hook = await register(app, {
      url: `https://${app}.example.com/hook`,
      headers: { Authorization: 'Bearer gateway-secret' },
      sensitive_headers: ['Authorization'],
    });
    apis(app, (req) =>
      new URL(req.url).host === `${app}.example.com`
        ? Response.json({ error: `unknown token ${(req.headers.authorization as string).slice(7)}` }, { status: 401 })
        : undefined,
    );
    const [id] = await pendingAt(hook.id, app, 1);
    await deliverDue(hook.id);
    const [attempt] = await storedAttempts(hook.id, id as string);
    expect(attempt?.status).toBe(401);
    expect(attempt?.body).not.toContain('gateway-secret');
    expect(MASKED).toBe('••••');
  });
});

describe('a Pub/Sub token request shared by concurrent attempts', () => {
  it('is shared by one pass only: an object reset while its request is under way holds no other pass', async () => {
    const app = freshApp();
    const key = { ...SA_KEY, client_email: `${app}@project-one.iam.gserviceaccount.com` };
    const kinds = destinations(app);
    const a = await register(app, { destination: { ...kinds.gcp_pubsub, service_account_key: key } });
    const b = await register(app, {
      destination: { ...kinds.gcp_pubsub, topic: `${kinds.gcp_pubsub.topic}-b`, service_account_key: key },
    });
    const c = await register(app, {
      destination: { ...kinds.gcp_pubsub, topic: `${kinds.gcp_pubsub.topic}-c`, service_account_key: key },
    });
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { requests } = apis(app, (req) =>
      new URL(req.url).host === 'oauth2.googleapis.com' && issuerOf(req) === key.client_email
        ? (held.then(() => Response.json({ access_token: GOOGLE_TOKEN, expires_in: 3599 })) as unknown as Response)
        : undefined,
    );
    const grants = () => at(requests, 'oauth2.googleapis.com').filter((r) => issuerOf(r) === key.client_email);
    await pendingAt(a.id, app, 1);
    await pendingAt(b.id, app, 1);
    const passA = deliverDue(a.id).then(
      () => 'ended',
      (err) => `failed: ${err}`,
    );
    await vi.waitFor(() => expect(grants()).toHaveLength(1));
    const passB = deliverDue(b.id).then(
      () => 'ended',
      (err) => `failed: ${err}`,
    );
    // B's pass (another object) asks for a token of its own: it never waits on A's request.
    await vi.waitFor(() => expect(grants()).toHaveLength(2));
    // A's object is reset while its token request is under way (an exception, a code update, eviction).
    await runInDurableObject(endpointOf(a.id), (_instance, state) => {
      state.abort('reset for the test');
    }).catch(() => {});
    release();
    const outcomeB = await Promise.race([passB, sleep(3000).then(() => 'still waiting')]);
    const outcomeA = await Promise.race([passA, sleep(100).then(() => 'still waiting')]);
    // A later pass of a third object C with the same key, the token endpoint answering at once
    // now: it must not wait on A's dead request.
    await pendingAt(c.id, app, 1);
    const later = await Promise.race([
      deliverDue(c.id).then(
        () => 'ended',
        (err) => `failed: ${err}`,
      ),
      sleep(3000).then(() => 'still waiting'),
    ]);
    expect({ outcomeA: outcomeA.startsWith('failed'), outcomeB, later }).toEqual({
      outcomeA: true,
      outcomeB: 'ended',
      later: 'ended',
    });
    expect(grants().length).toBeGreaterThanOrEqual(2);
  }, 20_000);
});

describe('disabled_reason after a PATCH', () => {
  it('does not name an API refusal for a webhook that is now an HTTP endpoint', async () => {
    const app = freshApp();
    const hook = await register(app, { destination: destinations(app).aws_sqs });
    // Disabled by the service for the queue's 404, as the pass records it.
    await env.DB.prepare(
      `UPDATE webhooks SET is_enabled = 0, disabled_reason = 'failing', disabled_at = '2026-11-01T00:00:00.000Z',
         disabled_cause = 'not_found', disabled_cause_at = '2026-11-01T00:00:00.000Z' WHERE webhook_id = CAST(?1 AS INTEGER)`,
    )
      .bind(hook.id)
      .run();
    const token = bearer(await tokenFor(app));
    const res = await SELF.fetch(
      new Request(URL_, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', ...token },
        body: JSON.stringify({
          webhook_id: Number(hook.id),
          url: `https://${app}.example.com/hook`,
          destination: { type: 'http' },
        }),
      }),
    );
    const { value: patched } = await expectValue<{ destination: { type: string }; disabled_reason: string }>(res);
    expect(patched.destination.type).toBe('http');
    // An HTTP endpoint's webhook is "failing", never "not_found".
    const { value } = await expectValue<{ disabled_reason: string }>(await get(`webhook_id=${hook.id}`, token));
    expect(value.disabled_reason).toBe('failing');
  });
});
