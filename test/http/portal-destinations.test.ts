// The portal's destination picker, in a real browser (the vitest project `browser`, as
// test/http/portal.test.ts): an endpoint added as an SQS queue with its fields, its credential
// entered once and shown as set; the list and the page name the destination; editing keeps the
// credential when left empty; a destination its API refused says why; custom headers, one
// sensitive, masked, kept on edit and sent. What the page shows is checked against the API.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { api, button, fact, portalBrowser, rowsOf } from './browser';
import { PATH, tokenFor } from './client';
import { type Receiver, startReceiver } from './receiver';

const { newPage, open } = portalBrowser();

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver(inject('destinationsReceiverPort'));
});
afterAll(async () => {
  await receiver?.close();
});

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

  it.each([
    [
      'forbidden',
      'the destination refused its credentials (access denied)',
      'Give it credentials with permission to send',
    ],
    [
      'not_found',
      'the destination does not exist (its queue, bus or topic was not found)',
      'Point it at one that exists',
    ],
  ])(
    'says why the service disabled a destination its API refused (%s), on the page and in the list, and what to do',
    async (reason, why, todo) => {
      const app = `portal-refused-${randomBytes(3).toString('hex')}`;
      const { value: hook } = await api<Hook>(app, 'POST', PATH, {
        destination: {
          type: 'aws_sqs',
          queue_url: QUEUE_URL,
          access_key_id: 'AKIAIOSFODNN7EXAMPLE',
          secret_access_key: 'k',
        },
      });
      const disabledAt = '2026-11-27T08:00:00.000Z';
      // The service's own replies, as they are once it has disabled the webhook for this reason.
      const disabled = (text: string) =>
        text.replace(
          /"is_enabled":true(.*?)"disabled_reason":null,"disabled_at":null,"failing_since":null/g,
          `"is_enabled":false$1"disabled_reason":"${reason}","disabled_at":"${disabledAt}","failing_since":"2026-11-20T08:00:00.000Z"`,
        );
      const { page } = await newPage({
        prepare: (context) =>
          // Every read of the webhooks (the endpoint, the list), whatever its query.
          context.route(
            (url) => url.pathname === PATH,
            async (route) => {
              if (route.request().method() !== 'GET') return route.continue();
              const reply = await route.fetch();
              return route.fulfill({ response: reply, body: disabled(await reply.text()) });
            },
          ),
      });
      await page.goto(`${inject('baseUrl')}/portal/endpoints/${hook.webhook_id}#token=${await tokenFor(app)}`);
      const state = fact(page, 'State');
      await state.getByText('Disabled', { exact: true }).waitFor();
      expect(await state.textContent()).toContain(`The service disabled it on `);
      expect(await state.textContent()).toContain(why);
      expect(await state.textContent()).toContain(todo);
      expect(await state.locator('time').getAttribute('datetime')).toBe(disabledAt);

      await page.getByRole('link', { name: 'All endpoints' }).click();
      const cell = rowsOf(page, 'Endpoints').first().locator('td[data-label="State"]');
      await cell.getByText(why, { exact: false }).waitFor();
      expect(await cell.textContent()).toMatch(/^DisabledThe service disabled it on /);
    },
  );

  it('adds an HTTP endpoint with custom headers, one sensitive: masked in the API and on the page, kept on edit, sent with a test event', async () => {
    const app = `portal-headers-${randomBytes(3).toString('hex')}`;
    const page = await open(await tokenFor(app));
    await button(page, 'Add endpoint').click();
    await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(receiver.url('/custom-headers'));
    await page.getByLabel('Custom headers').fill('X-Team: nft-indexer\nAuthorization: Bearer portal-s3cr3t');
    await page.getByLabel('Sensitive headers').fill('Authorization');
    await button(page, 'Create').click();
    await page.getByRole('status').getByText('Endpoint created').waitFor();

    const { value } = await api<{ webhooks: (Hook & { headers: Record<string, string> })[] }>(app, 'GET', PATH);
    const [hook] = value.webhooks;
    expect(hook?.headers).toEqual({ 'X-Team': 'nft-indexer', Authorization: '••••' });

    await rowsOf(page, 'Endpoints').first().getByRole('link').first().click();
    const shown = fact(page, 'Custom headers');
    await shown.waitFor();
    expect(await shown.textContent()).toBe('X-Team: nft-indexerAuthorization: ••••');
    expect(await page.locator('main').textContent()).not.toContain('portal-s3cr3t');

    // Edited without touching the headers: the sensitive value is kept, sealed.
    await button(page, 'Edit').click();
    await page.getByRole('textbox', { name: 'Description' }).fill('indexer');
    await button(page, 'Save').click();
    await page.getByText('Saved.').waitFor();
    const after = await api<{ headers: Record<string, string>; description: string }>(
      app,
      'GET',
      `${PATH}?webhook_id=${hook?.webhook_id}`,
    );
    expect(after.value).toMatchObject({ description: 'indexer', headers: hook?.headers });

    // Sent with the request, the sensitive one opened.
    await button(page, 'Send test event').click();
    const [request] = await receiver.waitFor('/custom-headers', 1);
    expect(request?.headers['x-team']).toBe('nft-indexer');
    expect(request?.headers.authorization).toBe('Bearer portal-s3cr3t');
  });
});
