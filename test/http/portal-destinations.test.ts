// The portal's destination picker, in a real browser (the vitest project `browser`, as
// test/http/portal.test.ts): an endpoint added as an SQS queue with its fields, its credential
// entered once and shown as set; the list and the page name the destination; editing keeps the
// credential when left empty. What the page shows is checked against the API.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api, button, fact, portalBrowser, rowsOf } from './browser';
import { PATH, tokenFor } from './client';

const { open } = portalBrowser();

const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/portal-queue';

interface Hook {
  webhook_id: number;
  url: string;
  destination: Record<string, string>;
}

describe('the portal’s destination picker', () => {
  it('adds an SQS endpoint, shows its credential as set, names it in the list and on its page, and keeps the credential on edit', async () => {
    const app = `portal-destinations-${randomBytes(3).toString('hex')}`;
    const page = await open(await tokenFor(app));
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
    const row = rowsOf(page, 'Endpoints').first();
    expect(await row.textContent()).toContain('(Amazon SQS)');

    await row.getByRole('link', { name: QUEUE_URL }).click();
    const facts = fact(page, 'Destination');
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
