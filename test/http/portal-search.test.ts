// An event's journey, found from the portal's header, in a real browser (the vitest project
// `browser`, as test/http/portal.test.ts): the search box takes a delivery id (the delivery's page,
// which a reload keeps) or an event id (the screen "Event": its type, time and data, and its
// deliveries, each linking to its endpoint and its delivery's page); an id the application does not
// have says Not found, and anything else is refused where it was typed. What the page shows is
// checked against the API. The webhooks point where nothing listens: their deliveries exist, and fail.
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, inject, it } from 'vitest';
import { apiOf, EVENT_PATH } from './api';
import { api, fact, portalBrowser, rowsOf } from './browser';
import { PATH, tokenFor } from './client';
import { until } from './receiver';
import { README_RECEIVER_PORT } from './wrangler-dev';

const { open } = portalBrowser();

const appOf = (name: string) => `portal-search-${name}-${randomBytes(3).toString('hex')}`;

/** A webhook of `appId` whose receiver is not there (its attempts fail at once). */
async function register(appId: string, name: string, extra: Record<string, unknown> = {}) {
  const res = await api<{ webhook_id: number; url: string }>(appId, 'POST', PATH, {
    url: `http://127.0.0.1:${README_RECEIVER_PORT}/search-${name}`,
    ...extra,
  });
  expect(res.status, res.text).toBe(201);
  return res.value;
}

interface Delivery {
  delivery_id: number;
  event_id: string;
  type: string;
  status: string;
  attempts: number;
}

/** Types `text` into the header's search and submits it. */
async function search(page: Page, text: string) {
  const box = page.getByRole('search').getByRole('searchbox', { name: 'Event or delivery id' });
  await box.fill(text);
  await box.press('Enter');
}

describe('the portal: an event or a delivery found from the header', () => {
  it("a delivery id opens the delivery's page (a reload keeps it); another application's says Not found; other text is refused", async () => {
    const app = appOf('delivery');
    const hook = await register(app, 'delivery');
    const sent = await api<{ delivery_id: number; event_id: string }>(app, 'POST', `${PATH}/test`, {
      webhook_id: hook.webhook_id,
    });
    expect(sent.status, sent.text).toBe(202);
    const delivery = await until('its first attempt', async () => {
      const d = await api<Delivery>(app, 'GET', `${PATH}/delivery?delivery_id=${sent.value.delivery_id}`);
      return d.value.attempts >= 1 ? d.value : undefined;
    });

    const page = await open(await tokenFor(app));
    await search(page, ` ${sent.value.delivery_id} `);
    await page.getByRole('heading', { level: 1, name: 'Delivery' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/portal/deliveries/${sent.value.delivery_id}`);
    await fact(page, 'Event id').getByText(sent.value.event_id, { exact: true }).waitFor();
    expect(await fact(page, 'Event type').textContent()).toBe(delivery.type);
    await rowsOf(page, 'Attempts').first().waitFor();
    // Its event id leads to the event's screen.
    expect(await fact(page, 'Event id').getByRole('link').getAttribute('href')).toBe(
      `/portal/events/${sent.value.event_id}`,
    );
    // A reload (or a bookmark) of the address opens it again.
    await page.reload();
    await fact(page, 'Event id').getByText(sent.value.event_id, { exact: true }).waitFor();

    // Another application's delivery is not this one's to see.
    const other = await open(await tokenFor(appOf('other')));
    await search(other, String(sent.value.delivery_id));
    const missing = other.getByRole('alert');
    await missing.waitFor();
    expect(await missing.textContent()).toBe(`Not found: this application has no delivery ${sent.value.delivery_id}.`);
    expect(await other.getByRole('table', { name: 'Attempts' }).count()).toBe(0);

    // Neither an event id nor a delivery id: refused by the box, the page stays.
    await other.getByRole('link', { name: 'Endpoints', exact: true }).click();
    await other.getByRole('heading', { level: 1, name: 'Endpoints' }).waitFor();
    await search(other, 'order 42');
    const refused = other.getByRole('search').getByRole('alert');
    await refused.waitFor();
    expect(await refused.textContent()).toBe('Enter an event id (evt_…) or a delivery id (digits).');
    expect(await other.getByRole('searchbox', { name: 'Event or delivery id' }).getAttribute('aria-invalid')).toBe(
      'true',
    );
    expect(new URL(other.url()).pathname).toBe('/portal/');
  });

  it('an event id opens the screen "Event": type, time, data, and its deliveries, each to its endpoint and delivery; an unknown one says Not found', async () => {
    // needs: GET /v1.0/app/nft/event?event_id= (the event and its deliveries)
    const app = appOf('event');
    const mints = await register(app, 'mints', { event_types: ['NEW_NFT'] });
    const all = await register(app, 'all');
    await register(app, 'other-types', { event_types: ['MOD_NFT'] });
    // A price past a double's digits: shown as it was published.
    const published = await apiOf(inject('baseUrl'), inject('secret')).call(
      'POST',
      EVENT_PATH,
      app,
      `{"app_id":"${app}","type":"NEW_NFT","data":{"token_id":"1002","price":12345678901234567890123}}`,
      'events:publish',
    );
    expect(published.status, published.text).toBe(202);
    const eventId = (JSON.parse(published.text) as { value: { event_id: string } }).value.event_id;
    const deliveryOf = async (webhookId: number) =>
      until(`the delivery to ${webhookId}`, async () => {
        const log = await api<{ deliveries: Delivery[] }>(app, 'GET', `${PATH}/delivery?webhook_id=${webhookId}`);
        return log.value.deliveries.find((d) => d.event_id === eventId);
      });
    const expected = [
      { hook: mints, delivery: await deliveryOf(mints.webhook_id) },
      { hook: all, delivery: await deliveryOf(all.webhook_id) },
    ];
    const event = await api<{ created_at: string }>(app, 'GET', `/v1.0/app/nft/event?event_id=${eventId}`);
    expect(event.status, event.text).toBe(200);

    const page = await open(await tokenFor(app));
    await search(page, eventId);
    await page.getByRole('heading', { level: 1, name: 'Event' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/portal/events/${eventId}`);
    await fact(page, 'Event id').getByText(eventId, { exact: true }).waitFor();
    expect(await fact(page, 'Type').textContent()).toBe('NEW_NFT');
    expect(await fact(page, 'Created').locator('time').getAttribute('datetime')).toBe(event.value.created_at);
    expect(await fact(page, 'Data').locator('pre').textContent()).toBe(
      '{\n  "token_id": "1002",\n  "price": 12345678901234567890123\n}',
    );
    const rows = rowsOf(page, 'Deliveries');
    await expect.poll(() => rows.count()).toBe(2);
    for (const { hook, delivery } of expected) {
      const row = rows.filter({ has: page.getByRole('link', { name: hook.url, exact: true }) });
      expect(await row.getByRole('link', { name: hook.url, exact: true }).getAttribute('href')).toBe(
        `/portal/endpoints/${hook.webhook_id}`,
      );
      const link = row.getByRole('link', { name: String(delivery.delivery_id), exact: true });
      expect(await link.getAttribute('href')).toBe(
        `/portal/endpoints/${hook.webhook_id}/deliveries/${delivery.delivery_id}`,
      );
      expect(await row.locator('td[data-label="Status"]').textContent()).toMatch(/^(?:pending|failed)$/);
    }
    // From the event to one delivery's page.
    await rows
      .filter({ has: page.getByRole('link', { name: mints.url, exact: true }) })
      .getByRole('link', { name: String(expected[0]?.delivery.delivery_id), exact: true })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Delivery' }).waitFor();
    await fact(page, 'Event id').getByText(eventId, { exact: true }).waitFor();

    // An event the application does not have.
    const unknown = `evt_${'0'.repeat(32)}`;
    await search(page, unknown);
    await page.getByRole('heading', { level: 1, name: 'Event' }).waitFor();
    const missing = page.getByRole('alert');
    await missing.waitFor();
    expect(await missing.textContent()).toBe(`Not found: this application has no event ${unknown}.`);
    expect(await page.getByRole('table', { name: 'Deliveries' }).count()).toBe(0);
  });
});
