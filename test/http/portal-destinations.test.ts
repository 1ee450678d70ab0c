// The portal's destination picker, in a real browser (the vitest project `browser`, as
// test/http/portal.test.ts): an endpoint added as an SQS queue with its fields, its credential
// entered once and shown as set; the list and the page name the destination; editing keeps the
// credential when left empty. What the page shows is checked against the API.
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser } from './browser';
import { PATH, parseIds, tokenFor } from './client';

const base = inject('baseUrl');

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
});

const contexts: { context: BrowserContext; errors: string[] }[] = [];
afterEach(async () => {
  for (const { context, errors } of contexts.splice(0)) {
    await context.close();
    expect(errors).toEqual([]);
  }
});

async function api<T = unknown>(appId: string, method: string, path: string) {
  const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${await tokenFor(appId)}` } });
  const text = await res.text();
  return { status: res.status, value: (parseIds(text) as { value?: T }).value as T, text };
}

async function open(appId: string, path: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  contexts.push({ context, errors });
  await page.goto(`${base}${path}#token=${await tokenFor(appId)}`);
  await page.getByRole('heading', { level: 1 }).waitFor();
  return page;
}

const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });
const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/portal-queue';

interface Hook {
  webhook_id: number;
  url: string;
  destination: Record<string, string>;
}

describe('the portal’s destination picker', () => {
  it('adds an SQS endpoint, shows its credential as set, names it in the list and on its page, and keeps the credential on edit', async () => {
    const app = `portal-destinations-${randomBytes(3).toString('hex')}`;
    const page = await open(app, '/portal/');
    await button(page, 'Add endpoint').click();
    await page.getByRole('combobox', { name: 'Type' }).selectOption('aws_sqs');
    expect(await page.getByRole('textbox', { name: 'Endpoint URL' }).count()).toBe(0);
    await page.getByRole('textbox', { name: 'Queue URL' }).fill(QUEUE_URL);
    await page.getByRole('textbox', { name: 'Access key id' }).fill('AKIAIOSFODNN7EXAMPLE');
    await page.getByLabel('Secret access key').fill('portal-secret-key');
    await button(page, 'Create').click();
    await page.getByRole('status').getByText('Endpoint created').waitFor();

    const { value } = await api<{ webhooks: Hook[] }>(app, 'GET', PATH);
    expect(value.webhooks).toHaveLength(1);
    const [hook] = value.webhooks as [Hook];
    expect(hook.url).toBe(QUEUE_URL);
    expect(hook.destination).toEqual({
      type: 'aws_sqs',
      queue_url: QUEUE_URL,
      access_key_id: 'AKIAIOSFODNN7EXAMPLE',
      credentials: 'set',
    });
    const row = page.getByRole('table', { name: 'Endpoints' }).locator('tbody tr').first();
    expect(await row.textContent()).toContain('(Amazon SQS)');

    await row.getByRole('link', { name: QUEUE_URL }).click();
    const facts = page.locator('dl.facts dt:text-is("Destination") + dd');
    await facts.waitFor();
    expect(await facts.textContent()).toContain('Amazon SQS');
    expect(await facts.textContent()).toContain('Secret access key: set');
    expect(await page.locator('main').textContent()).not.toContain('portal-secret-key');

    // Edit: the credential's field is empty ("set"); saved without it, it is kept.
    await button(page, 'Edit').click();
    expect(await page.getByLabel('Secret access key').inputValue()).toBe('');
    await page.getByRole('textbox', { name: 'Description' }).fill('queue');
    await button(page, 'Save').click();
    await page.getByText('Saved.').waitFor();
    const after = await api<Hook>(app, 'GET', `${PATH}?webhook_id=${hook.webhook_id}`);
    expect(after.value.destination).toEqual(hook.destination);
  });
});
