// Live deliveries on the endpoint's page in a real browser (the vitest project `browser`, as
// test/http/portal.test.ts): with the page open, a published event's delivery appears within 2
// seconds and each attempt updates its row, without a reload or a click; a read-only link sees
// them too; a dropped connection is opened again and the page catches up; a page past the 20 that
// a webhook may have watching refreshes every 10 seconds instead; a page whose webhook is deleted
// says so and opens no other connection. After each test: no request and
// no WebSocket of any page carried the token in its URL, and no page had an error.
import { randomBytes } from 'node:crypto';
import type { Page, WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { apiOf } from './api';
import { portalBrowser, rowsOf } from './browser';
import { PATH, tokenFor } from './client';
import { type Receiver, startReceiver, until } from './receiver';

const base = inject('baseUrl');
const api = apiOf(base, inject('secret'));
const LIVE_URL = /^ws:\/\/127\.0\.0\.1:\d+\/v1\.0\/app\/nft\/webhook\/delivery\/live\?webhook_id=\d+$/;

const pages = portalBrowser();
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver(inject('liveReceiverPort'));
});
afterAll(async () => {
  await receiver?.close();
});

const appOf = (name: string) => `portal-live-${name}-${randomBytes(3).toString('hex')}`;

/**
 * A fresh browser context for `token`'s link; `route` may intercept its sockets. After the test: no
 * error on the page, no request or WebSocket that carried the token in its URL, and no WebSocket
 * but the live deliveries'.
 */
async function newPage(token: string, route?: (ws: WebSocketRoute) => void) {
  const record = await pages.newPage({
    prepare: async (context) => {
      if (route !== undefined) await context.routeWebSocket(/\/delivery\/live/, route);
    },
    check: ({ errors, requests, sockets }) => {
      expect(errors).toEqual([]);
      for (const url of [...requests.map((r) => r.url), ...sockets]) expect(url).not.toContain(token);
      for (const url of sockets) expect(url).toMatch(LIVE_URL);
    },
  });
  return { page: record.page, record };
}

/** Opens webhook `id`'s page with `token`'s link; waits for its live state (`live` unless said). */
async function openEndpoint(
  token: string,
  id: number,
  { state = 'live', route }: { state?: string; route?: (ws: WebSocketRoute) => void } = {},
) {
  const { page, record } = await newPage(token, route);
  await page.goto(`${base}/portal/endpoints/${id}#token=${token}`);
  await page.getByRole('heading', { level: 1 }).waitFor();
  await page.locator(`[data-live="${state}"]`).waitFor();
  return { page, record };
}

const deliveries = (page: Page) => rowsOf(page, 'Deliveries');
/** The first row's cells: created, status, type, event id, attempts, last result. */
const firstRow = async (page: Page) =>
  (await deliveries(page).first().locator('td').allTextContents()).map((t) => t.trim());

/** Waits until the first row shows `cells` (status, attempts, last result); returns when it did (ms). */
async function rowShows(page: Page, status: string, attempts: string, result: string, timeoutMs = 10_000) {
  return until(
    `a row ${status}, ${attempts}, ${result}`,
    async () => {
      if ((await deliveries(page).count()) === 0) return false;
      const cells = await firstRow(page);
      return cells[1] === status && cells[4] === attempts && cells[5] === result && Date.now();
    },
    timeoutMs,
    50,
  );
}

/** A webhook of `app` at the receiver's `path`: its id. */
const register = async (app: string, path: string) => (await api.register(app, receiver.url(path))).id;

describe('the portal: live deliveries', () => {
  it('a published event: its delivery appears within 2 s, and each attempt updates its row, with no reload or click', async () => {
    const app = appOf('rows');
    const path = `/${app}`;
    receiver.answer(path, (n) => ({ status: n === 1 ? 500 : 200 }));
    const id = await register(app, path);
    const { page, record } = await openEndpoint(await tokenFor(app), id);
    await page.getByText('No deliveries.').waitFor();
    await page.evaluate(() => {
      (window as unknown as { unchanged: boolean }).unchanged = true;
    });

    const eventId = await api.publish(app, 'NEW_NFT', '{"token":"1"}');
    const published = Date.now();
    await deliveries(page).first().waitFor({ timeout: 5_000 });
    expect(Date.now() - published).toBeLessThan(2_000);
    expect((await firstRow(page))[3]).toBe(eventId);

    // The first attempt (500), then the retry a second later (200): each on the row within 2 s.
    const [first] = await receiver.waitFor(path, 1);
    const failed = await rowShows(page, 'pending', '1', 'HTTP 500');
    expect(failed - (first?.at as number)).toBeLessThan(2_000);
    const [, second] = await receiver.waitFor(path, 2);
    const succeeded = await rowShows(page, 'succeeded', '2', 'HTTP 200');
    expect(succeeded - (second?.at as number)).toBeLessThan(2_000);

    expect(await deliveries(page).count()).toBe(1);
    // One connection all along, and the same document: nothing reloaded it.
    expect(record.sockets.length).toBe(1);
    expect(await page.evaluate(() => (window as unknown as { unchanged?: boolean }).unchanged)).toBe(true);
    const [logged] = await api.deliveries(app, id);
    expect(logged).toMatchObject({ event_id: eventId, status: 'succeeded', attempts: 2, last_status: 200 });
  });

  it('a read-only link watches too', async () => {
    const app = appOf('read-only');
    const path = `/${app}`;
    const id = await register(app, path);
    const { page } = await openEndpoint(await tokenFor(app, 'webhooks:read'), id);
    await page.getByText('This link is read-only').waitFor();
    await api.publish(app, 'NEW_NFT', '{"token":"2"}');
    const published = Date.now();
    await deliveries(page).first().waitFor({ timeout: 5_000 });
    expect(Date.now() - published).toBeLessThan(2_000);
    const [attempt] = await receiver.waitFor(path, 1);
    const shown = await rowShows(page, 'succeeded', '1', 'HTTP 204');
    expect(shown - (attempt?.at as number)).toBeLessThan(2_000);
    expect((await api.deliveries(app, id)).map((d) => d.status)).toEqual(['succeeded']);
  });

  it('a dropped connection is opened again; what arrived meanwhile is shown, and what comes next live', async () => {
    const app = appOf('reconnect');
    const path = `/${app}`;
    const id = await register(app, path);
    const routes: { ws: WebSocketRoute; server: WebSocketRoute }[] = [];
    const { page, record } = await openEndpoint(await tokenFor(app), id, {
      route: (ws) => {
        routes.push({ ws, server: ws.connectToServer() });
      },
    });
    expect(routes.length).toBe(1);
    // The service's side goes away: the page is told, and opens another connection.
    await routes[0]?.server.close({ code: 1011, reason: 'dropped' });
    await routes[0]?.ws.close({ code: 1011, reason: 'dropped' });
    const missed = await api.publish(app, 'NEW_NFT', '{"token":"3"}');
    await until('a second connection', () => routes.length === 2, 10_000);
    await page.locator('[data-live="live"]').waitFor();
    await until(
      'the missed delivery',
      async () => (await deliveries(page).count()) === 1 && (await firstRow(page))[3] === missed,
    );

    const next = await api.publish(app, 'NEW_NFT', '{"token":"4"}');
    const published = Date.now();
    await until('the next delivery', async () => (await firstRow(page))[3] === next, 5_000, 50);
    expect(Date.now() - published).toBeLessThan(2_000);
    expect(record.sockets.length).toBe(2);
  });

  it('past 20 pages watching one webhook, the next refreshes every 10 seconds instead', async () => {
    const app = appOf('many');
    const path = `/${app}`;
    const id = await register(app, path);
    const token = await tokenFor(app);
    // Twenty watchers from one page: the webhook has as many as it may.
    const { page: holder } = await newPage(token);
    await holder.goto(`${base}/portal/`);
    const opened = await holder.evaluate(
      ({ id, token }) =>
        Promise.all(
          Array.from(
            { length: 20 },
            () =>
              new Promise<number>((resolve) => {
                const ws = new WebSocket(`ws://${location.host}/v1.0/app/nft/webhook/delivery/live?webhook_id=${id}`, [
                  'nft-webhook.live',
                  `bearer.${token}`,
                ]);
                ws.onopen = () => resolve(ws.readyState);
                ws.onclose = (e) => resolve(-e.code);
                (window as unknown as { held: WebSocket[] }).held ??= [];
                (window as unknown as { held: WebSocket[] }).held.push(ws);
              }),
          ),
        ),
      { id, token },
    );
    expect(opened).toEqual(Array(20).fill(1));
    // Give the object a moment: every close frame of a refused socket would have come by now.
    await new Promise((r) => setTimeout(r, 300));
    expect(
      await holder.evaluate(() => (window as unknown as { held: WebSocket[] }).held.map((w) => w.readyState)),
    ).toEqual(Array(20).fill(1));

    const { page, record } = await openEndpoint(token, id, { state: 'polling' });
    await page.getByText('this one refreshes every 10 seconds').waitFor();
    const eventId = await api.publish(app, 'NEW_NFT', '{"token":"5"}');
    await until('the delivery, refreshed', async () => (await deliveries(page).count()) === 1, 15_000);
    expect((await firstRow(page))[3]).toBe(eventId);
    // Refreshed by reading the log again (the page's one socket was refused).
    expect(record.sockets.length).toBe(1);
    expect(
      record.requests.map((r) => r.url).filter((u) => u.includes('/webhook/delivery?')).length,
    ).toBeGreaterThanOrEqual(2);
  });

  it('the webhook deleted: the page says so, and opens no other connection', async () => {
    const app = appOf('deleted');
    const id = await register(app, `/${app}`);
    const { page, record } = await openEndpoint(await tokenFor(app), id);
    const res = await api.call('DELETE', `${PATH}?webhook_id=${id}`, app);
    expect(res.text).toBe('{"return":0,"message":"success"}');
    await page.locator('[data-live="deleted"]').waitFor({ timeout: 5_000 });
    await page.getByText('No live updates: this webhook was deleted.').waitFor();
    // Past the first reconnection's delay (1 s at most): none was tried.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(record.sockets.length).toBe(1);
    expect(await page.locator('[data-live]').getAttribute('data-live')).toBe('deleted');
  });
});
