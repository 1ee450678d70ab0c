// The portal says why, in a real browser (the vitest project `browser`, as test/http/portal.test.ts):
// an endpoint the service disabled shows why and since when, on its open page and in the list,
// apart from one disabled by hand; a failing endpoint shows Failing and a warning that says what
// is happening and what to do; health counts the failed attempts of deliveries still retrying,
// rounds to the nearest tenth and stays current; operations a disabled endpoint refuses say to
// enable it first; a delivery shows the request that was sent; a deletion says so; an expired link
// shows only its notice; at 390 px the tables keep State and Last result in view, and a failing
// endpoint's page its state, warning and actions on the first screen. What the page shows is
// checked against the API.
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { api, button, fact, portalBrowser, rowsOf } from './browser';
import { PATH, tokenFor } from './client';
import { type Receiver, startReceiver, until } from './receiver';
import { README_RECEIVER_PORT } from './wrangler-dev';

const base = inject('baseUrl');
const { newPage, open } = portalBrowser();

let receiver: Receiver;
beforeAll(async () => {
  // This project's own receiver port (the `http` project's tests use theirs against their own wrangler dev).
  receiver = await startReceiver(inject('receiverPort'));
});
afterAll(async () => {
  await receiver?.close();
});

const appOf = (name: string) => `portal-why-${name}-${randomBytes(3).toString('hex')}`;

interface Webhook {
  webhook_id: number;
  url: string;
  is_enabled: boolean;
  disabled_reason: string | null;
  disabled_at: string | null;
  failing_since: string | null;
  secret: string;
}

/** A webhook of `appId` at `url` (the receiver's `path` unless a URL is given). */
async function register(appId: string, path: string) {
  const res = await api<Webhook>(appId, 'POST', PATH, { url: path.startsWith('http') ? path : receiver.url(path) });
  expect(res.status, res.text).toBe(201);
  return res.value;
}

const stored = async (appId: string, id: number) =>
  (await api<Webhook>(appId, 'GET', `${PATH}?webhook_id=${id}`)).value;

const state = (page: Page) => fact(page, 'State');
const health = (page: Page) => page.getByRole('region', { name: 'Health' });
const warning = (page: Page) => page.getByRole('region', { name: 'This endpoint is failing' });
/** The value of the term `term` in the failing endpoint's warning. */
const warned = (page: Page, term: string) => warning(page).locator(`dt:text-is("${term}") + dd`);

interface Delivery {
  delivery_id: number;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
}

/**
 * A webhook of `app` that succeeded once and then failed: its receiver answers the first request
 * 204, then 503 asking for an hour (Retry-After), so its second delivery waits an hour, pending.
 * Returns it as it stands once the service has seen it fail, with that delivery.
 */
async function failingWebhook(app: string, path: string) {
  receiver.answer(path, (n) => (n === 1 ? { status: 204 } : { status: 503, headers: { 'retry-after': '3600' } }));
  const hook = await register(app, path);
  for (let n = 1; n <= 2; n++) {
    expect((await api(app, 'POST', `${PATH}/test`, { webhook_id: hook.webhook_id })).status).toBe(202);
    await receiver.waitFor(path, n);
  }
  const webhook = await until('failing_since', async () => {
    const w = await stored(app, hook.webhook_id);
    return w.failing_since !== null ? w : undefined;
  });
  const waiting = await until('the delivery waiting an hour', async () => {
    const log = await api<{ deliveries: Delivery[] }>(app, 'GET', `${PATH}/delivery?webhook_id=${hook.webhook_id}`);
    const d = log.value.deliveries.find((x) => x.last_status === 503 && x.next_attempt_at !== null);
    return d ?? undefined;
  });
  return { webhook, waiting };
}

describe('the portal says why', () => {
  it('a 410 disables the endpoint: the open page says so with the reason and time, the list too, apart from one disabled by hand', async () => {
    const app = appOf('gone');
    receiver.answer('/why-gone', () => ({ status: 410 }));
    const gone = await register(app, '/why-gone');
    const byHand = await register(app, '/why-by-hand');
    const enabled = await register(app, '/why-enabled');
    expect((await api(app, 'PUT', PATH, { webhook_id: byHand.webhook_id, is_enabled: false })).status).toBe(200);

    const page = await open(await tokenFor(app), `/portal/endpoints/${gone.webhook_id}`);
    expect(await state(page).textContent()).toBe('Enabled');
    await button(page, 'Send test event').click();
    await receiver.waitFor('/why-gone', 1);
    // Without a reload: the page reads the endpoint again while it is open.
    await state(page).getByText('Disabled', { exact: true }).waitFor({ timeout: 15_000 });
    const after = await stored(app, gone.webhook_id);
    expect(after).toMatchObject({ is_enabled: false, disabled_reason: 'gone' });
    expect(await state(page).textContent()).toContain('The service disabled it on ');
    expect(await state(page).textContent()).toContain(': the endpoint answered 410 Gone.');
    expect(await state(page).locator('time').getAttribute('datetime')).toBe(after.disabled_at);
    // The operations a disabled endpoint refuses are unavailable, and say what to do.
    expect(await button(page, 'Send test event').isDisabled()).toBe(true);
    expect(await button(page, 'Recover failed deliveries').isDisabled()).toBe(true);
    await page
      .getByText('The endpoint is disabled: enable it first to send a test event or recover deliveries.')
      .waitFor();
    // After a reload, the same.
    await page.reload();
    await state(page)
      .getByText(/the endpoint answered 410 Gone/)
      .waitFor();

    await page.getByRole('link', { name: 'All endpoints' }).click();
    await until('three rows', async () => (await rowsOf(page, 'Endpoints').count()) === 3);
    const stateOf = async (url: string) =>
      (await rowsOf(page, 'Endpoints').filter({ hasText: url }).locator('td[data-label="State"]').textContent()) ?? '';
    expect(await stateOf(gone.url)).toMatch(
      /^DisabledThe service disabled it on .+: the endpoint answered 410 Gone\.$/,
    );
    expect(await stateOf(byHand.url)).toMatch(/^DisabledDisabled by hand on .+\.$/);
    expect(await stateOf(enabled.url)).toBe('Enabled');
    expect(await stored(app, byHand.webhook_id)).toMatchObject({ disabled_reason: 'application' });

    // Enabled again from the page: the reason goes, the tools come back.
    await page.getByRole('link', { name: gone.url, exact: true }).click();
    await button(page, 'Enable').click();
    await page.getByText('Enabled: the endpoint receives events again.').waitFor();
    expect(await state(page).textContent()).toBe('Enabled');
    expect(await button(page, 'Send test event').isDisabled()).toBe(false);
    expect(await stored(app, gone.webhook_id)).toMatchObject({ is_enabled: true, disabled_reason: null });
  });

  it('a failing endpoint shows Failing, not Enabled, in the list and on its page, with a warning: since when, the last result, the failure rate, the next attempt, when it would be disabled, what to do', async () => {
    const app = appOf('failing');
    const { webhook, waiting } = await failingWebhook(app, '/why-failing');
    const healthy = await register(app, '/why-healthy');

    const page = await open(await tokenFor(app), '/portal/');
    await until('two rows', async () => (await rowsOf(page, 'Endpoints').count()) === 2);
    const row = rowsOf(page, 'Endpoints').filter({ hasText: webhook.url });
    const badge = row.locator('td[data-label="State"] .badge');
    // Failing is said, and shown as a warning: not the green of Enabled.
    await badge.getByText('Failing', { exact: true }).waitFor();
    expect(await row.locator('td[data-label="State"]').textContent()).toMatch(
      /^FailingEnabled, but every attempt has failed since .+\.$/,
    );
    expect(await row.locator('td[data-label="State"] time').getAttribute('datetime')).toBe(webhook.failing_since);
    const enabled = rowsOf(page, 'Endpoints').filter({ hasText: healthy.url }).locator('td[data-label="State"] .badge');
    expect(await enabled.textContent()).toBe('Enabled');
    const colour = (l: typeof badge) => l.evaluate((e) => getComputedStyle(e).color);
    expect(await colour(badge)).not.toBe(await colour(enabled));

    await page.getByRole('link', { name: webhook.url, exact: true }).click();
    await warning(page).waitFor();
    expect(await state(page).textContent()).toBe('Failing');
    expect(await warned(page, 'Since').locator('time').getAttribute('datetime')).toBe(webhook.failing_since);
    // The last attempt's result, and the hour the receiver asked for.
    await warned(page, 'Last result')
      .getByText(/^HTTP 503 at /)
      .waitFor();
    expect(await warned(page, 'Last result').locator('time').getAttribute('datetime')).toBe(waiting.last_attempt_at);
    expect(await warned(page, 'Next attempt').locator('time').getAttribute('datetime')).toBe(waiting.next_attempt_at);
    // Of the last 24 hours' attempts, as the health counts them: one of two failed.
    await warned(page, 'Failure rate').getByText('1 of 2 attempts failed in 24 hours (50.0%)').waitFor();
    // Disabled after AUTO_DISABLE_AFTER_HOURS of failures (this run: the default, 120 hours).
    const off = new Date(Date.parse(webhook.failing_since as string) + 120 * 3_600_000).toISOString();
    expect(await warned(page, 'Disabled').locator('time').getAttribute('datetime')).toBe(off);
    expect(await warned(page, 'Disabled').textContent()).toMatch(
      /^At its first failed attempt after .+ \(120 hours of failures\), if it keeps failing$/,
    );
    // What to do, with the way to the Recover form.
    expect(await warning(page).locator('p').textContent()).toBe(
      'What to do: check that your receiver is up and answers with a 2xx status. Once it answers, the next attempt succeeds and this warning goes; then Recover the deliveries that failed meanwhile.',
    );
    await warning(page).getByRole('link', { name: 'Recover' }).click();
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#recover');
    expect(await page.getByRole('group', { name: 'Recover' }).isVisible()).toBe(true);
    expect(await stored(app, webhook.webhook_id)).toMatchObject({
      is_enabled: true,
      failing_since: webhook.failing_since,
    });

    // A healthy endpoint has no warning.
    await page.getByRole('link', { name: 'All endpoints' }).click();
    await page.getByRole('link', { name: healthy.url, exact: true }).click();
    await page.getByRole('region', { name: 'Health' }).waitFor();
    expect(await state(page).textContent()).toBe('Enabled');
    expect(await warning(page).count()).toBe(0);
  });

  it('the demo application (scripts/seed.sql) shows its disabled endpoint as disabled by hand', async () => {
    const page = await open(await tokenFor('demo-app-1'), '/portal/');
    const row = rowsOf(page, 'Endpoints').filter({ hasText: 'https://demo-app-1.example/hooks/burns' });
    await row.waitFor();
    expect(await row.locator('td[data-label="State"]').textContent()).toMatch(/^DisabledDisabled by hand on .+\.$/);
  });

  it('an operation refused because the endpoint is disabled says to enable it first, not only HTTP 409', async () => {
    const app = appOf('enable-first');
    const hook = await register(app, '/why-enable-first');
    const sent = await api<{ delivery_id: number }>(app, 'POST', `${PATH}/test`, { webhook_id: hook.webhook_id });
    await receiver.waitFor('/why-enable-first', 1);
    const page = await open(
      await tokenFor(app),
      `/portal/endpoints/${hook.webhook_id}/deliveries/${sent.value.delivery_id}`,
    );
    await page.getByRole('table', { name: 'Attempts' }).waitFor();
    // Disabled elsewhere while the page is open: Resend is refused, and the page says what to do.
    expect((await api(app, 'PUT', PATH, { webhook_id: hook.webhook_id, is_enabled: false })).status).toBe(200);
    await button(page, 'Resend').click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe(
      "The endpoint is disabled: enable it first (Enable, on the endpoint's page), then resend.",
    );
  });

  it('health counts the failed attempts of deliveries still retrying, never 100 % when attempts fail, and stays current', async () => {
    const app = appOf('health');
    // Three 500s, then a success: one delivery, four attempts.
    receiver.answer('/why-retry', (n) => ({ status: n <= 3 ? 500 : 204 }));
    const retry = await register(app, '/why-retry');
    const page = await open(await tokenFor(app), `/portal/endpoints/${retry.webhook_id}`);
    await health(page).getByText('Last 24 hours: 0 succeeded, 0 failed; no attempts').waitFor();
    await button(page, 'Send test event').click();
    await receiver.waitFor('/why-retry', 4, 20_000);
    // Without a reload or a click.
    await health(page)
      .getByText('Last 24 hours: 1 succeeded, 0 failed; 4 attempts, 3 failed (25.0% succeeded)')
      .waitFor({ timeout: 15_000 });
    const stats = await api<{ last_24h: Record<string, number> }>(
      app,
      'GET',
      `${PATH}/stats?webhook_id=${retry.webhook_id}`,
    );
    expect(stats.value.last_24h).toMatchObject({ succeeded: 1, attempts: 4, failed_attempts: 3 });
    // The chart shows the hour's failed attempts.
    const bad = page.locator('figure.chart rect.bad');
    expect(
      Math.max(...(await bad.evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('height')))))),
    ).toBeGreaterThan(0);

    // Connection failures only (nothing listens there): never 100 %, and the chart is not empty.
    const down = await register(app, `http://127.0.0.1:${README_RECEIVER_PORT}/why-down`);
    const other = await open(await tokenFor(app), `/portal/endpoints/${down.webhook_id}`);
    await button(other, 'Send test event').click();
    const text = await until(
      'four failed attempts',
      async () => {
        const t = (await health(other).locator('p.health').first().textContent()) ?? '';
        return t.includes('4 attempts') ? t : undefined;
      },
      20_000,
      250,
    );
    expect(text).toBe('Last 24 hours: 0 succeeded, 1 failed; 4 attempts, 4 failed (0.0% succeeded)');
    expect(text).not.toContain('100');
    const failed = other.locator('figure.chart rect.bad');
    expect(
      Math.max(...(await failed.evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('height')))))),
    ).toBeGreaterThan(0);
  });

  it('health rounds to the nearest tenth: 4 attempts of 11 succeeded is 36.4 %, not 36.3 %', async () => {
    const app = appOf('round');
    // Four deliveries one after the other: 3 failures then a success, the same, 1 failure then a
    // success, a success: 11 attempts, 4 succeeded (36.36 %).
    const answers = [500, 500, 500, 204, 500, 500, 500, 204, 500, 204, 204];
    receiver.answer('/why-round', (n) => ({ status: answers[n - 1] ?? 204 }));
    const hook = await register(app, '/why-round');
    for (const after of [4, 8, 10, 11]) {
      expect((await api(app, 'POST', `${PATH}/test`, { webhook_id: hook.webhook_id })).status).toBe(202);
      await receiver.waitFor('/why-round', after, 20_000);
    }
    const stats = await until('the eleven attempts counted', async () => {
      const s = await api<{ last_24h: Record<string, number> }>(
        app,
        'GET',
        `${PATH}/stats?webhook_id=${hook.webhook_id}`,
      );
      return s.value.last_24h.attempts === 11 && s.value.last_24h.succeeded === 4 ? s.value : undefined;
    });
    expect(stats.last_24h).toMatchObject({ succeeded: 4, failed: 0, attempts: 11, failed_attempts: 7 });
    const page = await open(await tokenFor(app), `/portal/endpoints/${hook.webhook_id}`);
    await health(page)
      .getByText('Last 24 hours: 4 succeeded, 0 failed; 11 attempts, 7 failed (36.4% succeeded)', { exact: true })
      .waitFor();
  });

  it("a delivery's page shows the request that was sent, never a secret, and says when a response body is empty", async () => {
    const app = appOf('request');
    receiver.answer('/why-request', () => ({ status: 204 }));
    const hook = await register(app, '/why-request');
    const sent = await api<{ delivery_id: number }>(app, 'POST', `${PATH}/test`, { webhook_id: hook.webhook_id });
    const [arrived] = await receiver.waitFor('/why-request', 1);
    const page = await open(
      await tokenFor(app),
      `/portal/endpoints/${hook.webhook_id}/deliveries/${sent.value.delivery_id}`,
    );
    await until('its attempt', async () => (await rowsOf(page, 'Attempts').count()) === 1);
    const request = page.getByRole('region', { name: 'Request' });
    // The body exactly as the receiver got it.
    expect(await request.locator('pre').textContent()).toBe(arrived?.body.toString('utf8'));
    const header = async (name: string) => (await request.locator(`dt:has-text("${name}") + dd`).textContent()) ?? '';
    expect(await header('webhook-id')).toBe(String(arrived?.headers['webhook-id']));
    expect(await header('webhook-timestamp')).toContain(String(arrived?.headers['webhook-timestamp']));
    expect(await header('webhook-signature')).toContain('v1,<base64 of HMAC-SHA256>');
    // Never the signature itself, nor the secret.
    const text = (await page.locator('main').textContent()) ?? '';
    const signature = String(arrived?.headers['webhook-signature']).split(',')[1] ?? '';
    expect(signature.length).toBeGreaterThan(20);
    expect(text).not.toContain(signature);
    expect(text).not.toContain(hook.secret);
    expect(text).not.toContain('whsec_');
    // A 204's empty body, in words, not as an empty box.
    const cell = rowsOf(page, 'Attempts').nth(0).locator('td').last();
    expect(await cell.textContent()).toBe('Empty body');
    expect(await cell.locator('pre').count()).toBe(0);
  });

  it('a deletion says so on the list it goes to', async () => {
    const app = appOf('delete');
    const hook = await register(app, '/why-delete');
    const page = await open(await tokenFor(app), `/portal/endpoints/${hook.webhook_id}`);
    await button(page, 'Delete').click();
    await page.getByRole('dialog', { name: 'Delete this endpoint?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor();
    const notice = page.getByRole('status').filter({ hasText: 'Endpoint deleted' });
    await notice.waitFor();
    expect(await notice.textContent()).toBe(`Endpoint deleted: ${hook.url}`);
    expect((await api(app, 'GET', `${PATH}?webhook_id=${hook.webhook_id}`)).status).toBe(404);
    await page.getByText('No endpoints yet.').waitFor();
  });

  it.each([
    ['the list', '/portal/'],
    ['an endpoint', '/portal/endpoints/ID'],
    ['a delivery', '/portal/endpoints/ID/deliveries/DELIVERY'],
    ['the event types', '/portal/event-types'],
  ])('a link that has expired, opened on %s, shows only its notice, nothing of the page', async (_, path) => {
    const app = appOf('expired');
    const hook = await register(app, '/why-expired');
    const sent = await api<{ delivery_id: number }>(app, 'POST', `${PATH}/test`, { webhook_id: hook.webhook_id });
    await receiver.waitFor('/why-expired', 1);
    const { page } = await newPage();
    // The service refuses the token, as it does once the link has expired; its replies come in
    // one by one, the first refusal before the others.
    let n = 0;
    await page.route(`${base}/v1.0/app/nft/**`, async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 100 * n++));
      await route.fulfill({
        status: 401,
        contentType: 'application/json',
        headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
        body: '{"return":20004,"message":"Invalid jwt token"}',
      });
    });
    const at = path.replace('ID', String(hook.webhook_id)).replace('DELIVERY', String(sent.value.delivery_id));
    await page.goto(`${base}${at}#token=${await tokenFor(app)}`);
    await page.getByRole('heading', { level: 1, name: 'This link has expired' }).waitFor();
    // Time for every refused call to land.
    await page.waitForTimeout(1500);
    const root = page.locator('#app');
    expect(await root.locator(':scope > *').count()).toBe(1);
    expect(await page.locator('main').count()).toBe(1);
    expect(await page.locator('table, header, section, form, button, [role="alert"]').count()).toBe(0);
    expect((await root.textContent())?.trim()).toBe(
      'This link has expiredPortal links work for a short time only. Go back to your platform and open the portal again to get a new link.',
    );
  });

  it('at 390 px the endpoints list keeps State and the deliveries table Last result in view', async () => {
    const app = appOf('narrow');
    receiver.answer('/why-narrow', () => ({ status: 204 }));
    const hook = await register(app, '/why-narrow');
    await api(app, 'POST', `${PATH}/test`, { webhook_id: hook.webhook_id });
    await receiver.waitFor('/why-narrow', 1);
    const inView = async (page: Page, cell: string) => {
      const box = await page.locator(cell).first().boundingBox();
      expect(box).not.toBeNull();
      expect(box!.x).toBeGreaterThanOrEqual(0);
      expect(box!.x + box!.width).toBeLessThanOrEqual(390);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    };
    const page = await open(await tokenFor(app), '/portal/', { width: 390, height: 844 });
    await until('the row', async () => (await rowsOf(page, 'Endpoints').count()) === 1);
    await inView(page, 'td[data-label="State"] .badge');
    expect(await page.locator('td[data-label="State"]').first().textContent()).toBe('Enabled');
    await page.getByRole('link', { name: hook.url, exact: true }).click();
    await until(
      'the succeeded delivery',
      async () => (await rowsOf(page, 'Deliveries').first().textContent())?.includes('succeeded'),
      20_000,
    );
    await inView(page, 'td[data-label="Last result"]');
    expect(await page.locator('td[data-label="Last result"]').first().textContent()).toBe('HTTP 204');
    await inView(page, 'td[data-label="Status"]');
  });

  it("at 390 x 844 a failing endpoint's page shows its state, the warning and the actions on the first screen", async () => {
    const app = appOf('fold');
    const { webhook } = await failingWebhook(app, '/why-fold');
    const page = await open(await tokenFor(app), `/portal/endpoints/${webhook.webhook_id}`, {
      width: 390,
      height: 844,
    });
    await warned(page, 'Last result')
      .getByText(/^HTTP 503 at /)
      .waitFor();
    await warned(page, 'Next attempt').locator('time').waitFor();
    await page
      .getByRole('region', { name: 'Health' })
      .getByText(/^Last 24 hours: /)
      .waitFor();
    expect(await page.evaluate(() => window.scrollY)).toBe(0);
    const bottom = async (what: string, l: ReturnType<Page['locator']>) => {
      const box = await l.boundingBox();
      expect(box, what).not.toBeNull();
      expect(box!.y + box!.height, what).toBeLessThanOrEqual(844);
      expect(box!.x + box!.width, what).toBeLessThanOrEqual(390);
      return box!.y + box!.height;
    };
    await bottom('state', state(page).locator('.badge'));
    expect(await state(page).locator('.badge').textContent()).toBe('Failing');
    await bottom('warning', warning(page));
    const actions = page.getByRole('region', { name: 'Actions' });
    await bottom('actions', actions);
    for (const name of ['Disable', 'Edit', 'Delete', 'Show secret', 'Rotate secret']) {
      await bottom(name, actions.getByRole('button', { name, exact: true }));
    }
  });
});
