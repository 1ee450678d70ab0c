// The portal's links in a real browser (the vitest project `browser`, as test/http/portal.test.ts):
// a second link opened in a tab that shows the portal, a link whose fragment cannot be read, a
// read-only link however its scopes are written, the portal's headers on its 404 and 405 over
// real HTTP, and the application named by the claim the service reads (JWT_APP_CLAIM, on a Worker
// of this test's own).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { api, portalBrowser, TOKEN_KEY } from './browser';
import { PATH, tokenFor } from './client';
import { until } from './receiver';
import { type Dev, ownWorker } from './wrangler-dev';

const base = inject('baseUrl');
const { newPage } = portalBrowser();

const appOf = (name: string) => `portal-${name}-${randomBytes(3).toString('hex')}`;

/** A token for `claims` (with an hour to live), signed with `secret` (the shared Worker's by default). */
const tokenOf = (claims: Record<string, unknown>, secret = inject('secret')) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(secret));

/** Registers a webhook for `appId` through the API; its URL. */
async function register(appId: string, name: string) {
  const url = `https://hooks.example.com/${name}`;
  const res = await api(appId, 'POST', PATH, { url });
  // The reply's text with its status: a refusal (e.g. a 503 and why) says so in the failure.
  expect(res.status, res.text).toBe(201);
  return url;
}

const endpointLink = (page: Page, url: string) => page.getByRole('link', { name: url, exact: true });
const stored = (page: Page) => page.evaluate((k) => sessionStorage.getItem(k), TOKEN_KEY);
const expiredHeading = (page: Page) => page.getByRole('heading', { level: 1, name: 'This link has expired' });

describe('portal links in a browser', () => {
  it('a second link opened in the same tab switches to its application and leaves the address bar', async () => {
    const [first, second] = [appOf('first'), appOf('second')];
    const [firstUrl, secondUrl] = await Promise.all([register(first, 'first'), register(second, 'second')]);
    const [firstToken, secondToken] = await Promise.all([tokenFor(first), tokenFor(second)]);
    const { page, errors, requests } = await newPage();
    await page.goto(`${base}/portal/#token=${firstToken}`);
    await endpointLink(page, firstUrl).waitFor();
    expect(page.url()).toBe(`${base}/portal/`);

    // The platform sends the same tab (or frame) a new link: only the fragment changes.
    await page.goto(`${base}/portal/#token=${secondToken}`);
    await endpointLink(page, secondUrl).waitFor();
    expect(await endpointLink(page, firstUrl).count()).toBe(0);
    expect(await page.locator('header .who').textContent()).toContain(second);
    expect(page.url()).toBe(`${base}/portal/`);
    expect(await stored(page)).toBe(secondToken);
    expect(requests.map((r) => r.url).filter((u) => u.includes(secondToken) || u.includes(firstToken))).toEqual([]);
    expect(errors).toEqual([]);
  });

  it.each([
    ['a malformed escape', '%E0%A4%A'],
    ['an empty token', ''],
    ['characters no token has', '%3Cscript%3E%20x'],
    ['text that is no JWT', 'garbage'],
  ])('a fragment it cannot read (%s) shows that the link has expired, never a blank page', async (_, fragment) => {
    const { page, errors } = await newPage();
    await page.goto(`${base}/portal/#token=${fragment}`);
    await expiredHeading(page).waitFor();
    expect(page.url()).toBe(`${base}/portal/`);
    expect(await stored(page)).toBeNull();
    expect(errors).toEqual([]);
  });

  it('a fragment it cannot read, opened in a tab that shows an application, ends that session', async () => {
    const app = appOf('then-bad');
    const url = await register(app, 'then-bad');
    const { page, errors } = await newPage();
    await page.goto(`${base}/portal/#token=${await tokenFor(app)}`);
    await endpointLink(page, url).waitFor();
    await page.goto(`${base}/portal/#token=%E0%A4%A`);
    await expiredHeading(page).waitFor();
    expect(page.url()).toBe(`${base}/portal/`);
    expect(await stored(page)).toBeNull();
    // A reload does not bring the old application back.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'This page needs a link' }).waitFor();
    expect(errors).toEqual([]);
  });

  it.each([
    ['a scope array', { scope: ['webhooks:read'] }],
    ['a scp string', { scp: 'webhooks:read' }],
    ['a scp array (Okta)', { scp: ['openid', 'webhooks:read'] }],
  ])('a read-only link written as %s is read-only: no change, no Show secret', async (_, scopes) => {
    const app = appOf('ro-spelling');
    const url = await register(app, 'ro-spelling');
    const { page, errors } = await newPage();
    await page.goto(`${base}/portal/#token=${await tokenOf({ sub: app, ...scopes })}`);
    await page.getByText('This link is read-only').waitFor();
    expect(await page.getByRole('button', { name: 'Add endpoint' }).count()).toBe(0);
    await endpointLink(page, url).click();
    await page.getByRole('heading', { level: 1, name: url }).waitFor();
    await page.getByRole('table', { name: 'Deliveries' }).waitFor();
    for (const name of ['Show secret', 'Rotate secret', 'Disable', 'Edit', 'Delete', 'Send test event']) {
      expect(await page.getByRole('button', { name, exact: true }).count(), name).toBe(0);
    }
    expect(errors).toEqual([]);
  });
});

describe('the portal headers on every reply under /portal (wrangler dev)', () => {
  it.each([
    ['GET', '/portal/nope', 404],
    ['GET', '/portal/endpoints/0', 404],
    ['POST', '/portal/', 405],
    ['DELETE', '/portal/endpoints/1', 405],
    ['OPTIONS', '/portal', 405],
  ])('%s %s (%i) carries the CSP, Referrer-Policy and nosniff', async (method, path, status) => {
    const res = await fetch(`${base}${path}`, { method, redirect: 'manual' });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'self';.*frame-ancestors 'none'/);
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.json()).toMatchObject({ return: status });
  });
});

describe('the application the portal names, with JWT_APP_CLAIM=client_id', () => {
  let folder: string;
  let dev: Dev | undefined;
  let worker: ReturnType<typeof ownWorker>;
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'nft-webhook-app-claim-'));
    worker = ownWorker(folder, [], { JWT_APP_CLAIM: 'client_id' });
    dev = await worker.start();
  }, 120_000);
  afterAll(async () => {
    await dev?.stop();
    rmSync(folder, { recursive: true, force: true });
  });

  it('shows the claim the service reads (client_id), not sub', async () => {
    const app = appOf('client');
    const token = await tokenOf({ sub: 'person-42', client_id: app }, worker.secret);
    const own = dev?.baseUrl as string;
    const created = await fetch(`${own}${PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example.com/client' }),
    });
    expect(created.status).toBe(201);
    const { page, errors } = await newPage();
    await page.goto(`${own}/portal/#token=${token}`);
    await endpointLink(page, 'https://hooks.example.com/client').waitFor();
    await until('the name', async () => (await page.locator('header .who').textContent())?.includes(app));
    expect(await page.locator('header .who').textContent()).not.toContain('person-42');
    expect(errors).toEqual([]);
  });
});
