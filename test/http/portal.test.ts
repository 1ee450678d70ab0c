// The application portal in a real browser (the vitest project `browser`): headless Chromium (the
// binary of @sparticuz/chromium, driven by playwright-core) against its `wrangler dev`, one
// journey of the portal (docs/portal.md) per test, each with an application of its own. Controls
// are found by their accessible names (roles and labels), as a screen reader finds them. Every
// test also checks that the page made no request to another origin, and that no request but the
// API calls carried the token.
//
// Tests marked `// needs: ...` use API operations that another change builds (PATCH of a webhook,
// GET .../webhook/stats, POST .../delivery/resend, GET /v1.0/app/nft/event-types, the read-only
// scope): they are written to the contract and fail until those exist.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { SignJWT } from 'jose';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { api, button, type Opened, portalBrowser, rowsOf, type Size, TOKEN_KEY } from './browser';
import { PATH, tokenFor } from './client';
import { type Receiver, startReceiver, until } from './receiver';

const base = inject('baseUrl');
const HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">';

const { newPage } = portalBrowser();
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver(inject('portalReceiverPort'));
});
afterAll(async () => {
  await receiver?.close();
});

/** The check, after the test, of what a page with `token`'s link requested. */
const requestsOf =
  (token: string) =>
  ({ requests }: Opened) => {
    const origin = new URL(base).origin;
    // Nothing leaves this origin: no CDN, font, analytics.
    expect(requests.filter((r) => new URL(r.url).origin !== origin).map((r) => r.url)).toEqual([]);
    for (const r of requests) {
      // The token is never in a URL, and goes as a Bearer header to the API only.
      expect(r.url).not.toContain(token);
      if (r.authorization !== undefined) {
        expect(new URL(r.url).pathname).toMatch(/^\/v1\.0\/app\/nft\//);
        expect(r.authorization).toBe(`Bearer ${token}`);
      }
    }
  };

const appOf = (name: string) => `portal-${name}-${randomBytes(3).toString('hex')}`;

/** Opens the portal's link for `token` (at `path`) in a fresh browser context (its own sessionStorage). */
async function open(token: string, { path = '/portal/', ...size }: { path?: string } & Size = {}) {
  const { page, requests, errors } = await newPage({
    ...size,
    prepare: (context) =>
      context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(base).origin }),
    check: requestsOf(token),
  });
  const response = await page.goto(`${base}${path}#token=${token}`);
  return { page, response, requests, errors };
}

async function register(appId: string, path: string, extra: Record<string, unknown> = {}) {
  const res = await api<{ webhook_id: number; secret: string }>(appId, 'POST', PATH, {
    url: receiver.url(path),
    ...extra,
  });
  expect(res.status, res.text).toBe(201);
  return res.value;
}

/** Opens the endpoint's page from the Endpoints table. */
async function openEndpoint(page: Page, url: string) {
  await page.getByRole('link', { name: url, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: url }).waitFor();
}

describe('the portal in a browser', () => {
  it('open: takes the token from the link, removes it from the address bar at once, keeps it in sessionStorage only; CSP on the page', async () => {
    const app = appOf('open');
    const token = await tokenFor(app);
    const { page, response, errors } = await open(token);
    await page.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor();
    expect(page.url()).toBe(`${base}/portal/`);
    expect(await page.evaluate(() => location.hash)).toBe('');
    expect(await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_KEY)).toBe(token);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    // The security headers of the page the browser got.
    const headers = response?.headers() ?? {};
    expect(headers['content-security-policy']).toContain("default-src 'self'");
    expect(headers['content-security-policy']).toContain("script-src 'self'");
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(errors).toEqual([]);
    // A reload keeps the session (sessionStorage), without the token in the address.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor();
    expect(page.url()).toBe(`${base}/portal/`);
    // A link to /portal (no slash) is redirected, and the browser keeps the fragment.
    const other = await open(token, { path: '/portal' });
    await other.page.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor();
    expect(other.page.url()).toBe(`${base}/portal/`);
    expect(await other.page.evaluate((k) => sessionStorage.getItem(k), TOKEN_KEY)).toBe(token);
  });

  it("npm run portal -- <app_id> [--read-only] prints a link that opens that application's portal", async () => {
    const link = (...args: string[]) => {
      const run = spawnSync('node', ['scripts/portal-link.mjs', ...args, '--base', base], {
        cwd: new URL('../..', import.meta.url).pathname,
        encoding: 'utf8',
        env: { ...process.env, JWT_SECRET: inject('secret'), JWT_APP_CLAIM: 'sub', JWT_ISSUER: '', JWT_AUDIENCE: '' },
      });
      expect(run.status, run.stderr).toBe(0);
      const printed = run.stdout.trim();
      expect(printed).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/portal\/#token=[\w-]+\.[\w-]+\.[\w-]+$/);
      return printed.slice(printed.indexOf('#token=') + '#token='.length);
    };
    // The seeded demo application (scripts/seed.sql), as in the README's walkthrough.
    const { page } = await open(link('demo-app-1'));
    await page.getByRole('link', { name: 'https://demo-app-1.example/hooks/transfers', exact: true }).waitFor();
    expect(await page.getByText('This link is read-only').count()).toBe(0);
    const readOnly = await open(link('demo-app-1', '--read-only', '--ttl', '600'));
    await readOnly.page.getByText('This link is read-only').waitFor();
    expect(await button(readOnly.page, 'Add endpoint').count()).toBe(0);
  });

  it('the first load is script and style of at most 100 KiB gzip, all from this origin', async () => {
    const html = await (await fetch(`${base}/portal/`)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/portal\/[^"]+)"/g)].map((m) => m[1] as string);
    expect(assets.length).toBe(2);
    let total = 0;
    for (const path of assets) total += gzipSync(Buffer.from(await (await fetch(base + path)).arrayBuffer())).length;
    expect(total).toBeLessThanOrEqual(100 * 1024);
  });

  it('list: the table "Endpoints", with URL, state, what each receives (or All events) and creation, no Description column while none has one; Load more', async () => {
    const app = appOf('list');
    for (let i = 1; i <= 22; i++) {
      await register(
        app,
        `/list/${String(i).padStart(2, '0')}`,
        i === 2 ? { event_types: ['NEW_NFT', 'MOD_NFT'] } : {},
      );
    }
    await api(app, 'PUT', PATH, { webhook_id: (await firstId(app)) + 2, is_enabled: false });
    const { page } = await open(await tokenFor(app));
    const rows = rowsOf(page, 'Endpoints');
    await until('the first page', async () => (await rows.count()) === 20);
    // An empty column takes no room: no endpoint has a description.
    const headers = await page.getByRole('table', { name: 'Endpoints' }).getByRole('columnheader').allInnerTexts();
    expect(headers).toEqual(['URL', 'State', 'Receives', 'Created']);
    const first = await rows.nth(0).locator('td').allInnerTexts();
    expect(first.slice(0, 3)).toEqual([receiver.url('/list/01'), 'Enabled', 'All events']);
    expect((await rows.nth(1).locator('td').allInnerTexts())[2]).toBe('NEW_NFT and MOD_NFT events');
    // Disabled by the application (PUT): said so, with when.
    expect((await rows.nth(2).locator('td').allInnerTexts())[1]).toMatch(/^Disabled\nDisabled by hand on .+\.$/);
    await button(page, 'Load more').click();
    await until('the second page', async () => (await rows.count()) === 22);
    expect(await button(page, 'Load more').count()).toBe(0);
  });

  it('list: a long URL wraps after its / and . only, and reads and copies as the URL', async () => {
    const app = appOf('wrap');
    const url = receiver.url('/inbound/notifications/marketplace/deliveries.nft.json');
    await register(app, '/inbound/notifications/marketplace/deliveries.nft.json');
    const { page } = await open(await tokenFor(app), { width: 390, height: 844 });
    const link = page.getByRole('link', { name: url, exact: true });
    await link.waitFor();
    expect(await link.textContent()).toBe(url);
    // The link's text as it is laid out, line by line.
    const lines = await link.evaluate((a) => {
      const out: string[] = [];
      let top: number | null = null;
      let line = '';
      const walker = document.createTreeWalker(a, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode() as Text | null; node; node = walker.nextNode() as Text | null) {
        for (let i = 0; i < node.data.length; i++) {
          const range = document.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const at = Math.round(range.getBoundingClientRect().top);
          if (top !== null && at > top + 2) {
            out.push(line);
            line = '';
          }
          top = at;
          line += node.data[i];
        }
      }
      out.push(line);
      return out;
    });
    expect(lines.join('')).toBe(url);
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines.slice(0, -1)) expect(line).toMatch(/[/.]$/);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  });

  it('add: Add endpoint, Endpoint URL, Create; the secret shown once with Copy; a refused URL shows the reason by the form', async () => {
    const app = appOf('add');
    const { page } = await open(await tokenFor(app));
    await button(page, 'Add endpoint').click();
    await page.getByRole('textbox', { name: 'Endpoint URL' }).fill('https://10.0.0.1/hooks');
    await button(page, 'Create').click();
    // The service's reason (its X-Error-Detail), by the form, in the application's terms: this run
    // allows local receivers' origins, and the reason says so without naming the server's setting.
    const alert = page.locator('form').getByRole('alert').filter({ hasText: 'HTTP 400' });
    await alert.waitFor();
    expect(await alert.textContent()).toBe(
      'url host is not a public address: https://10.0.0.1 is not one of the local receivers this service is set up to reach (HTTP 400)',
    );
    expect(await page.locator('main').textContent()).not.toContain('WEBHOOK_URL_ALLOWED_ORIGINS');
    const url = receiver.url('/add');
    await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(url);
    await button(page, 'Create').click();
    const secret = page.locator('[data-secret]');
    await secret.waitFor();
    const shown = await secret.textContent();
    expect(shown).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await button(page, 'Copy').click();
    await page.getByText('Copied', { exact: true }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(shown);
    await until('the new row', async () => (await rowsOf(page, 'Endpoints').count()) === 1);
    expect((await rowsOf(page, 'Endpoints').nth(0).locator('td').allInnerTexts())[0]).toBe(url);
    // The secret is the webhook's.
    const list = await api<{ webhooks: { webhook_id: number }[] }>(app, 'GET', PATH);
    const id = list.value.webhooks[0]?.webhook_id;
    expect((await api<{ secret: string }>(app, 'GET', `${PATH}/secret?webhook_id=${id}`)).value.secret).toBe(shown);
  });

  it('add with description, event types and rate limit', async () => {
    // needs: GET /v1.0/app/nft/event-types (the checkboxes), description and rate_limit in webhook objects
    const app = appOf('add-all');
    const { page } = await open(await tokenFor(app));
    await button(page, 'Add endpoint').click();
    const group = page.getByRole('group', { name: 'Event types' });
    for (const type of [
      'NEW_NFT',
      'MOD_NFT',
      'MEMBER_NFT_ADD',
      'MEMBER_NFT_SUB',
      'MEMBER_NFT_MERGE_ADD',
      // The operational events the service makes, for a webhook to subscribe to.
      'endpoint.disabled',
      'endpoint.failing',
      'endpoint.recovered',
      'delivery.exhausted',
      'secret.rotated',
    ]) {
      await group.getByRole('checkbox', { name: type, exact: true }).waitFor({ timeout: 5000 });
    }
    // The test event's type is not one to subscribe to: Send test event sends it whatever the types.
    expect(await group.getByRole('checkbox', { name: 'webhook.test', exact: true }).count()).toBe(0);
    const url = receiver.url('/add-all');
    await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(url);
    await page.getByRole('textbox', { name: 'Description' }).fill('Mints <b>and</b> edits');
    await group.getByRole('checkbox', { name: 'NEW_NFT', exact: true }).check();
    await group.getByRole('checkbox', { name: 'MOD_NFT', exact: true }).check();
    await page.getByRole('spinbutton', { name: 'Rate limit' }).fill('25');
    await button(page, 'Create').click();
    await page.locator('[data-secret]').waitFor();
    await until('the new row', async () => (await rowsOf(page, 'Endpoints').count()) === 1);
    const cells = await rowsOf(page, 'Endpoints').nth(0).locator('td').allInnerTexts();
    // One endpoint has a description: the column is there.
    expect(cells.slice(0, 4)).toEqual([url, 'Mints <b>and</b> edits', 'Enabled', 'NEW_NFT and MOD_NFT events']);
    const list = await api<{ webhooks: { description: string; rate_limit: number; event_types: string[] }[] }>(
      app,
      'GET',
      PATH,
    );
    expect(list.value.webhooks[0]).toMatchObject({
      description: 'Mints <b>and</b> edits',
      rate_limit: 25,
      event_types: ['NEW_NFT', 'MOD_NFT'],
    });
  });

  it('edit: Edit, then Save changes URL, description, event types and rate limit', async () => {
    // needs: PATCH /v1.0/app/nft/webhook, GET /v1.0/app/nft/event-types
    const app = appOf('edit');
    const { webhook_id: id } = await register(app, '/edit-before');
    const { page } = await open(await tokenFor(app));
    await openEndpoint(page, receiver.url('/edit-before'));
    await button(page, 'Edit').click();
    const after = receiver.url('/edit-after');
    await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(after);
    await page.getByRole('textbox', { name: 'Description' }).fill('Edited');
    await page
      .getByRole('group', { name: 'Event types' })
      .getByRole('checkbox', { name: 'NEW_NFT', exact: true })
      .check();
    await page.getByRole('spinbutton', { name: 'Rate limit' }).fill('7');
    await button(page, 'Save').click();
    await page.getByRole('heading', { level: 1, name: after }).waitFor();
    await page.getByText('Saved.').waitFor();
    const read = await api<Record<string, unknown>>(app, 'GET', `${PATH}?webhook_id=${id}`);
    expect(read.value).toMatchObject({ url: after, description: 'Edited', event_types: ['NEW_NFT'], rate_limit: 7 });
  });

  it('disable and enable: the button changes the state, shown and stored', async () => {
    const app = appOf('toggle');
    const { webhook_id: id } = await register(app, '/toggle');
    const { page } = await open(await tokenFor(app));
    await openEndpoint(page, receiver.url('/toggle'));
    await button(page, 'Disable').click();
    await button(page, 'Enable').waitFor();
    await page.getByText('Disabled', { exact: true }).first().waitFor();
    expect((await api<{ is_enabled: boolean }>(app, 'GET', `${PATH}?webhook_id=${id}`)).value.is_enabled).toBe(false);
    await button(page, 'Enable').click();
    await button(page, 'Disable').waitFor();
    expect((await api<{ is_enabled: boolean }>(app, 'GET', `${PATH}?webhook_id=${id}`)).value.is_enabled).toBe(true);
  });

  it('delete: a dialog (focus moves into it, and back on Cancel or Escape) whose Delete button confirms', async () => {
    const app = appOf('delete');
    const { webhook_id: id } = await register(app, '/delete');
    const { page } = await open(await tokenFor(app));
    await openEndpoint(page, receiver.url('/delete'));
    await button(page, 'Delete').click();
    const dialog = page.getByRole('dialog', { name: 'Delete this endpoint?' });
    await dialog.waitFor();
    expect(await dialog.evaluate((d) => d.contains(document.activeElement))).toBe(true);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Delete');
    // By keyboard: Enter on the focused Delete button opens it again, Escape closes it.
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    expect(await dialog.evaluate((d) => d.contains(document.activeElement))).toBe(true);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Delete');
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor();
    expect((await api(app, 'GET', `${PATH}?webhook_id=${id}`)).status).toBe(404);
    await until('an empty table', async () => (await page.getByText('No endpoints yet.').count()) === 1);
  });

  it('secret: Show secret reads it; Rotate secret, confirmed by the dialog, shows the new one and the 24-hour note', async () => {
    const app = appOf('secret');
    const { webhook_id: id, secret } = await register(app, '/secret');
    const { page } = await open(await tokenFor(app));
    await openEndpoint(page, receiver.url('/secret'));
    await button(page, 'Show secret').click();
    await page.locator('[data-secret]').waitFor();
    expect(await page.locator('[data-secret]').textContent()).toBe(secret);
    await button(page, 'Rotate secret').click();
    const dialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.getByText('Secret rotated.').waitFor();
    const rotated = await page.locator('[data-secret]').textContent();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    expect(await page.getByText(/previous secret keeps signing for 24 hours/).count()).toBe(1);
    expect((await api<{ secret: string }>(app, 'GET', `${PATH}/secret?webhook_id=${id}`)).value.secret).toBe(rotated);
  });

  it("test event to a receiver, its delivery and attempts; the receiver's hostile body is shown as text and runs nothing; Copy event id", async () => {
    const app = appOf('test-event');
    receiver.answer('/hostile', () => ({ status: 200, headers: { 'content-type': 'text/html' }, body: HOSTILE }));
    await register(app, '/hostile');
    const { page, errors } = await open(await tokenFor(app));
    await openEndpoint(page, receiver.url('/hostile'));
    await page.getByRole('combobox', { name: 'Test event type', exact: true }).selectOption('webhook.test');
    await button(page, 'Send test event').click();
    await page.getByText(/^Test event sent: evt_/).waitFor();
    const [arrived] = await receiver.waitFor('/hostile', 1);
    const eventId = String(arrived?.headers['webhook-id']);
    const rows = rowsOf(page, 'Deliveries');
    await until(
      'the delivery, succeeded',
      async () => (await rows.count()) === 1 && (await rows.nth(0).textContent())?.includes('succeeded'),
      20_000,
    );
    const cells = await rows.nth(0).locator('td').allInnerTexts();
    expect(cells.slice(1, 6)).toEqual(['succeeded', 'webhook.test', eventId, '1', 'HTTP 200']);
    // The Event type filter asks the API for that type's deliveries (not only those loaded).
    const typeFilter = page.getByRole('combobox', { name: 'Event type', exact: true });
    await typeFilter.selectOption('NEW_NFT');
    await page.getByText('No deliveries of this type.').waitFor();
    await typeFilter.selectOption('webhook.test');
    await until('the test event again', async () => (await rows.count()) === 1);
    // Its Created links to the delivery (its event id, to the event).
    await rows.nth(0).locator('td[data-label="Created"]').getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: 'Delivery' }).waitFor();
    const attempts = rowsOf(page, 'Attempts');
    await until('its attempt', async () => (await attempts.count()) === 1);
    const attempt = await attempts.nth(0).locator('td').allInnerTexts();
    expect(attempt[0]).toBe('1');
    expect(attempt[2]).toBe('HTTP 200');
    expect(attempt[3]).toMatch(/^\d+ ms$/);
    // The characters, as text; nothing of them became an element or ran.
    expect(await attempts.nth(0).locator('pre').textContent()).toBe(HOSTILE);
    expect(await page.locator('main img, main script').count()).toBe(0);
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(errors).toEqual([]);
    await button(page, 'Copy event id').click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(eventId);
  });

  it('resend: a new delivery of the same event, to the same receiver', async () => {
    // needs: POST /v1.0/app/nft/webhook/delivery/resend
    const app = appOf('resend');
    const { webhook_id: id } = await register(app, '/resend');
    const sent = await api<{ delivery_id: number; event_id: string }>(app, 'POST', `${PATH}/test`, { webhook_id: id });
    expect(sent.status, sent.text).toBe(202);
    await receiver.waitFor('/resend', 1);
    const { page } = await open(await tokenFor(app), {
      path: `/portal/endpoints/${id}/deliveries/${sent.value.delivery_id}`,
    });
    await page.getByRole('heading', { level: 1, name: 'Delivery' }).waitFor();
    await button(page, 'Resend').click();
    await page.getByText('Resent as a new delivery.').waitFor();
    const requests = await receiver.waitFor('/resend', 2);
    expect(requests[1]?.headers['webhook-id']).toBe(sent.value.event_id);
    await page.getByRole('link', { name: 'Open the new delivery' }).click();
    await until('its attempt', async () => (await rowsOf(page, 'Attempts').count()) === 1);
  });

  it('recover: the Status filter shows the failed delivery; Since and Recover failed deliveries attempt it again', async () => {
    const app = appOf('recover');
    let failing = true;
    receiver.answer('/recover', () => ({ status: failing ? 500 : 204 }));
    const { webhook_id: id } = await register(app, '/recover');
    const sent = await api(app, 'POST', `${PATH}/test`, { webhook_id: id });
    expect(sent.status, sent.text).toBe(202);
    // Four attempts (the tests' schedule: 1s 1s 1s), then failed.
    await receiver.waitFor('/recover', 4, 30_000);
    const { page } = await open(await tokenFor(app));
    await openEndpoint(page, receiver.url('/recover'));
    const rows = rowsOf(page, 'Deliveries');
    await until(
      'the delivery, failed',
      async () => {
        await button(page, 'Refresh').click();
        return (await rows.count()) === 1 && (await rows.nth(0).textContent())?.includes('failed');
      },
      20_000,
      500,
    );
    const status = page.getByRole('combobox', { name: 'Status', exact: true });
    await status.selectOption('succeeded');
    await until('no succeeded delivery', async () => (await page.getByText('No deliveries.').count()) === 1);
    await status.selectOption('failed');
    await until('the failed one', async () => (await rows.count()) === 1);
    failing = false;
    await page.getByRole('group', { name: 'Recover' }).waitFor();
    expect(await page.getByLabel('Since', { exact: true }).getAttribute('type')).toBe('datetime-local');
    await button(page, 'Recover failed deliveries').click();
    await page.getByText('Recovery started: 1 failed delivery will be attempted again.').waitFor();
    await receiver.waitFor('/recover', 5, 20_000);
    await status.selectOption('');
    await until(
      'the delivery, succeeded',
      async () => {
        await button(page, 'Refresh').click();
        return (await rows.nth(0).textContent())?.includes('succeeded');
      },
      20_000,
      500,
    );
  });

  it('health: the last 24 hours and 7 days as text with the attempts’ success rate, and a chart of 24 hourly bars', async () => {
    // needs: GET /v1.0/app/nft/webhook/stats
    const app = appOf('health');
    receiver.answer('/health', (n) => ({ status: n === 1 ? 204 : 500 }));
    const { webhook_id: id } = await register(app, '/health');
    await api(app, 'POST', `${PATH}/test`, { webhook_id: id });
    await receiver.waitFor('/health', 1);
    await api(app, 'POST', `${PATH}/test`, { webhook_id: id });
    await receiver.waitFor('/health', 5, 30_000);
    const { page } = await open(await tokenFor(app), { path: `/portal/endpoints/${id}` });
    await until(
      'the health text',
      async () => {
        const text = (await page.getByRole('region', { name: 'Health' }).textContent()) ?? '';
        // Two deliveries: one succeeded at once, one failed four times (its retry schedule ran out).
        if (text.includes('Last 24 hours: 1 succeeded, 1 failed; 5 attempts, 4 failed (20.0% succeeded)')) return true;
        await page.reload();
        return false;
      },
      20_000,
      1000,
    );
    await page.getByText('Last 7 days: 1 succeeded, 1 failed; 5 attempts, 4 failed (20.0% succeeded)').waitFor();
    const chart = page.getByRole('img', { name: /Attempts per hour over the last 24 hours/ });
    expect(await chart.locator('g').count()).toBe(24);
  });

  it('catalog: the page "Event types", each type with its description and the whole body a receiver gets', async () => {
    // needs: GET /v1.0/app/nft/event-types
    const app = appOf('catalog');
    const { page } = await open(await tokenFor(app));
    await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Event types' }).click();
    await page.getByRole('heading', { level: 1, name: 'Event types' }).waitFor();
    for (const type of [
      'NEW_NFT',
      'MOD_NFT',
      'MEMBER_NFT_ADD',
      'MEMBER_NFT_SUB',
      'MEMBER_NFT_MERGE_ADD',
      'webhook.test',
      // The operational events the service makes, for a webhook to subscribe to.
      'endpoint.disabled',
      'endpoint.failing',
      'endpoint.recovered',
      'delivery.exhausted',
      'secret.rotated',
    ]) {
      const section = page.getByRole('region', { name: type, exact: true });
      await section.waitFor({ timeout: 5000 });
      expect((await section.locator('p').first().textContent())?.length).toBeGreaterThan(0);
      // The body as deliveries send it: the type, a timestamp, and the catalog's example as data.
      const body = JSON.parse((await section.locator('pre').textContent()) ?? '') as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(['type', 'timestamp', 'data']);
      expect(body.type).toBe(type);
      expect(Number.isNaN(Date.parse(String(body.timestamp)))).toBe(false);
      expect(typeof body.data).toBe('object');
    }
    const catalog = await api<{ event_types: { type: string; example: unknown }[] }>(
      app,
      'GET',
      '/v1.0/app/nft/event-types',
    );
    const newNft = page.getByRole('region', { name: 'NEW_NFT', exact: true });
    expect(JSON.parse((await newNft.locator('pre').textContent()) ?? '').data).toEqual(
      catalog.value.event_types.find((t) => t.type === 'NEW_NFT')?.example,
    );
    await page
      .getByRole('region', { name: 'webhook.test', exact: true })
      .getByText(/not a type to subscribe to/)
      .waitFor();
  });

  it('read-only link: no control that changes anything, on any page', async () => {
    const app = appOf('read-only');
    const { webhook_id: id } = await register(app, '/read-only');
    const sent = await api<{ delivery_id: number }>(app, 'POST', `${PATH}/test`, { webhook_id: id });
    await receiver.waitFor('/read-only', 1);
    const { page } = await open(await tokenFor(app, 'webhooks:read'));
    await page.getByText('This link is read-only').waitFor();
    await until('the row', async () => (await rowsOf(page, 'Endpoints').count()) === 1);
    const changing = [
      'Add endpoint',
      'Create',
      'Disable',
      'Enable',
      'Edit',
      'Save',
      'Delete',
      'Send test event',
      'Rotate secret',
      'Recover failed deliveries',
      'Resend',
    ];
    const none = async () => {
      for (const name of changing) expect(await button(page, name).count(), name).toBe(0);
    };
    await none();
    await openEndpoint(page, receiver.url('/read-only'));
    await until('the delivery', async () => (await rowsOf(page, 'Deliveries').count()) === 1);
    await none();
    // Nor the signing secret: whoever holds it can sign as the service.
    expect(await button(page, 'Show secret').count()).toBe(0);
    await page.goto(`${base}/portal/endpoints/${id}/deliveries/${sent.value.delivery_id}`);
    await page.getByRole('heading', { level: 1, name: 'Delivery' }).waitFor();
    await until('its attempt', async () => (await rowsOf(page, 'Attempts').count()) === 1);
    await none();
  });

  it('read-only token: the service refuses every change with 403 insufficient_scope', async () => {
    // needs: the webhooks:read scope (every change 403 insufficient_scope)
    const app = appOf('read-only-api');
    const { webhook_id: id } = await register(app, '/read-only-api');
    const put = await api(app, 'PUT', PATH, { webhook_id: id, is_enabled: false }, 'webhooks:read');
    expect(put.status).toBe(403);
    const post = await api(app, 'POST', PATH, { url: receiver.url('/read-only-api-2') }, 'webhooks:read');
    expect(post.status).toBe(403);
  });

  it('expired link: a 401 shows that the link has expired and a new one is needed; no token at all says a link is needed', async () => {
    const app = appOf('expired');
    const expired = await new SignJWT({ sub: app })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(new TextEncoder().encode(inject('secret')));
    const { page } = await open(expired);
    await page.getByRole('heading', { level: 1, name: 'This link has expired' }).waitFor();
    expect(await page.getByText(/open the portal again to get a new link/).count()).toBe(1);
    expect(page.url()).toBe(`${base}/portal/`);

    const { page: bare } = await newPage();
    await bare.goto(`${base}/portal/`);
    await bare.getByRole('heading', { level: 1, name: 'This page needs a link' }).waitFor();
  });

  it('keeps int64 ids exact: 2^53 + 1 from the API is linked and sent back as 9007199254740993', async () => {
    const app = appOf('int64');
    const token = await tokenFor(app);
    const big = '9007199254740993';
    let webhook = `{"webhook_id":${big},"url":"https://example.com/big","is_enabled":true,"event_types":null,"created_at":"2026-01-01T00:00:00.000Z","updated_at":"2026-01-01T00:00:00.000Z"}`;
    const { page } = await newPage({ check: requestsOf(token) });
    let sent = '';
    // The service's replies for this id, as it writes them (exact JSON integers).
    await page.route(`${base}/v1.0/app/nft/**`, async (route) => {
      const url = new URL(route.request().url());
      const reply = (value: string) =>
        route.fulfill({
          status: 200,
          contentType: 'application/json',
          body: `{"return":0,"message":"success","value":${value}}`,
        });
      if (url.pathname === PATH && route.request().method() === 'PUT') {
        sent = route.request().postData() ?? '';
        // The page reads the webhook again after PUT (by the same exact id): now disabled by hand.
        webhook = webhook.replace('"is_enabled":true', '"is_enabled":false,"disabled_reason":"application"');
        return route.fulfill({
          status: 200,
          contentType: 'application/json',
          body: '{"return":0,"message":"success"}',
        });
      }
      if (url.pathname === PATH && url.searchParams.get('webhook_id') === big) return reply(webhook);
      if (url.pathname === PATH) return reply(`{"webhooks":[${webhook}],"next_cursor":null}`);
      if (url.pathname === `${PATH}/delivery`) return reply('{"deliveries":[],"next_cursor":null}');
      return route.fulfill({
        status: 404,
        contentType: 'application/json',
        body: '{"return":404,"message":"not found"}',
      });
    });
    await page.goto(`${base}/portal/#token=${token}`);
    const link = page.getByRole('link', { name: 'https://example.com/big' });
    await link.waitFor();
    expect(await link.getAttribute('href')).toBe(`/portal/endpoints/${big}`);
    await link.click();
    await button(page, 'Disable').click();
    await button(page, 'Enable').waitFor();
    expect(sent).toBe(`{"webhook_id":${big},"is_enabled":false}`);
  });

  it.each([360, 1440])(
    'fits a window %i px wide: nothing wider than the window but the tables, which scroll',
    async (width) => {
      const app = appOf(`width-${width}`);
      const { webhook_id: id } = await register(app, `/width/${'a'.repeat(80)}`);
      const { page } = await open(await tokenFor(app), { width, height: 800, path: `/portal/endpoints/${id}` });
      await button(page, 'Show secret').waitFor();
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      await page.goto(`${base}/portal/`);
      await until('the row', async () => (await rowsOf(page, 'Endpoints').count()) === 1);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    },
  );
});

/** The id of the application's first webhook. */
async function firstId(appId: string): Promise<number> {
  const list = await api<{ webhooks: { webhook_id: number }[] }>(appId, 'GET', `${PATH}?limit=1`);
  return list.value.webhooks[0]?.webhook_id as number;
}
