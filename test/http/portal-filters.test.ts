// The endpoint page's content filter, ordering and value set in a real browser (the vitest project
// `browser`, as test/http/portal.test.ts): what an endpoint receives said in words, a filter edited
// and shown, a refused one with the service's reason and nothing saved, Try filter against the
// catalog's examples and an example edited, values pasted and counted, the set's values paged,
// searched and removed (its panel only where the filter uses $in_set), a read-only link without
// any of the controls, and the page at 390 px. What the page did is checked through the API too.
import { randomBytes } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { apiOf } from './api';
import { api, button, fact, portalBrowser, rowsOf, type Size } from './browser';
import { PATH, tokenFor } from './client';

const base = inject('baseUrl');
const { newPage, open } = portalBrowser();

const appOf = (name: string) => `portal-filters-${name}-${randomBytes(3).toString('hex')}`;

/** A webhook of `appId` (its id), with `extra` fields. */
async function register(appId: string, name: string, extra: Record<string, unknown> = {}) {
  const res = await api<{ webhook_id: number }>(appId, 'POST', PATH, {
    url: `https://hooks.example.com/${name}`,
    ...extra,
  });
  expect(res.status, res.text).toBe(201);
  return res.value.webhook_id;
}

/** A webhook of `appId` (its id) registered with the JSON text `fields` (numbers sent as written). */
async function registerText(appId: string, name: string, fields: string) {
  const body = `{"url":"https://hooks.example.com/${name}",${fields}}`;
  const { status, text } = await apiOf(base, inject('secret')).call('POST', PATH, appId, body);
  expect(status, text).toBe(201);
  return (JSON.parse(text) as { value: { webhook_id: number } }).value.webhook_id;
}

/** The webhook as the API shows it. */
async function stored(appId: string, id: number) {
  const res = await api<Record<string, unknown>>(appId, 'GET', `${PATH}?webhook_id=${id}`);
  expect(res.status, res.text).toBe(200);
  return res.value;
}

/** The set's size as the API counts it. */
async function setSize(appId: string, id: number) {
  const res = await api<{ count: number }>(appId, 'GET', `${PATH}/values?webhook_id=${id}&limit=1`);
  expect(res.status, res.text).toBe(200);
  return res.value.count;
}

/** Opens the endpoint's page in a fresh context with `token`. */
async function openEndpoint(token: string, id: number, size?: Size) {
  const page = await open(token, `/portal/endpoints/${id}`, size);
  await page.getByRole('region', { name: 'Value set' }).waitFor();
  return page;
}

// The catalog's NEW_NFT example: its contract and owner.
const CONTRACT = '0x5a1f8e1b7c3d9a2e4f60718293a4b5c6d7e8f901';
const OWNER = '0x8ba1f109551bd432803012645ac136ddd64dba72';

describe('the portal: filters, ordering and value sets', () => {
  it('a filter edited in the form is saved as typed and shown on the page as formatted JSON; None when cleared', async () => {
    const app = appOf('edit');
    const id = await register(app, 'edit');
    const page = await openEndpoint(await tokenFor(app), id);
    expect(await fact(page, 'Filter').textContent()).toBe('None');
    expect(await fact(page, 'Ordering').textContent()).toBe('Unordered');

    await button(page, 'Edit').click();
    const filter = page.getByLabel('Filter', { exact: true });
    expect(await filter.inputValue()).toBe('');
    // A price floor in wei past 2^53: sent as typed, every digit kept.
    const typed = `{"data.contract": "${CONTRACT}", "data.price": {"$gte": 12345678901234567890123}}`;
    await filter.fill(typed);
    await button(page, 'Save').click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();

    const after = await stored(app, id);
    expect(Object.keys(after.filter as object)).toEqual(['data.contract', 'data.price']);
    // The stored filter keeps every digit (a double would have rounded them).
    const raw = await api(app, 'GET', `${PATH}?webhook_id=${id}`);
    expect(raw.text).toContain(
      `"filter":{"data.contract":"${CONTRACT}","data.price":{"$gte":12345678901234567890123}}`,
    );
    const shown = await fact(page, 'Filter').textContent();
    expect(JSON.parse(shown ?? '')).toMatchObject({ 'data.contract': CONTRACT });
    expect(shown).toContain('\n  "data.contract"');
    expect(shown).toContain('"$gte": 12345678901234567890123');

    // Editing again starts from the stored filter; an empty Filter saves null, shown as None.
    await button(page, 'Edit').click();
    expect(JSON.parse(await filter.inputValue())).toMatchObject({ 'data.contract': CONTRACT });
    await filter.fill('');
    await button(page, 'Save').click();
    await expect.poll(() => fact(page, 'Filter').textContent()).toBe('None');
    expect((await stored(app, id)).filter).toBeNull();
  });

  it('Ordering: FIFO chosen in the Edit form is saved and shown; Unordered again saves null', async () => {
    const app = appOf('ordering');
    const id = await register(app, 'ordering', { filter: { type: 'NEW_NFT' } });
    const page = await openEndpoint(await tokenFor(app), id);
    expect(await fact(page, 'Ordering').textContent()).toBe('Unordered');
    const patches: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'PATCH') patches.push(r.postData() ?? '');
    });
    await button(page, 'Edit').click();
    await page.getByLabel('Ordering', { exact: true }).selectOption({ label: 'FIFO' });
    await button(page, 'Save').click();
    await expect.poll(() => fact(page, 'Ordering').textContent()).toBe('FIFO');
    expect((await stored(app, id)).ordering).toBe('fifo');
    // The filter was not touched, so it was not sent.
    expect(JSON.parse(patches[0] ?? '{}')).not.toHaveProperty('filter');
    expect((await stored(app, id)).filter).toEqual({ type: 'NEW_NFT' });

    await button(page, 'Edit').click();
    expect(await page.getByLabel('Ordering', { exact: true }).inputValue()).toBe('fifo');
    await page.getByLabel('Ordering', { exact: true }).selectOption({ label: 'Unordered' });
    await button(page, 'Save').click();
    await expect.poll(() => fact(page, 'Ordering').textContent()).toBe('Unordered');
    expect((await stored(app, id)).ordering).toBeNull();
  });

  it("an invalid filter is refused: the service's reason is shown by the form, as text, and nothing is saved", async () => {
    const app = appOf('refused');
    const saved = { type: 'NEW_NFT' };
    const id = await register(app, 'refused', { filter: saved, description: 'before' });
    const page = await openEndpoint(await tokenFor(app), id);
    await button(page, 'Edit').click();
    await page.getByLabel('Description', { exact: true }).fill('after');
    const filter = page.getByLabel('Filter', { exact: true });
    await filter.fill('{"$or": [{"type": "NEW_NFT"}, {"data.price": {"$gte": "<b>ten</b>"}}]}');
    await button(page, 'Save').click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const reason = await alert.textContent();
    expect(reason).toContain('filter.$or.1.data.price.$gte');
    expect(reason).toContain('HTTP 400');
    expect(await filter.getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('form b').count()).toBe(0);
    // The form stays open with what was typed; the service kept everything as it was.
    expect(await filter.inputValue()).toContain('<b>ten</b>');
    const after = await stored(app, id);
    expect(after.filter).toEqual(saved);
    expect(after.description).toBe('before');

    // Text that is no JSON object is refused by the page before anything is sent.
    await filter.fill('{"type": ');
    await button(page, 'Save').click();
    await page.getByRole('alert').filter({ hasText: 'not valid JSON' }).waitFor();
    expect((await stored(app, id)).description).toBe('before');
  });

  it('Try filter: the filter in the text area against the catalog example of the chosen type, nothing saved', async () => {
    const app = appOf('try');
    const id = await register(app, 'try');
    const page = await openEndpoint(await tokenFor(app), id);
    await button(page, 'Edit').click();
    const filter = page.getByLabel('Filter', { exact: true });
    const type = page.getByLabel('Example event type');
    const outcome = page.locator('.try-outcome');

    // The catalog's NEW_NFT example is of this contract; MEMBER_NFT_ADD has a member_id.
    await filter.fill(`{"type": "NEW_NFT", "data.contract": "${CONTRACT.toUpperCase().replace('0X', '0x')}"}`);
    await type.selectOption('NEW_NFT');
    await button(page, 'Try filter').click();
    await expect.poll(() => outcome.textContent()).toBe('Matches');
    await type.selectOption('MEMBER_NFT_ADD');
    await button(page, 'Try filter').click();
    await expect.poll(() => outcome.textContent()).toBe('Does not match');
    await filter.fill('{"data.member_id": {"$prefix": "mbr_"}}');
    await button(page, 'Try filter').click();
    await expect.poll(() => outcome.textContent()).toBe('Matches');

    // A refused filter: the reason instead of an answer.
    await filter.fill('{"data.token_id": {"$between": [1, 2]}}');
    await button(page, 'Try filter').click();
    await page.getByRole('alert').filter({ hasText: 'data.token_id' }).waitFor();
    expect(await outcome.textContent()).toBe('');
    // Trying saved nothing.
    expect((await stored(app, id)).filter).toBeNull();
  });

  it('values pasted are added and removed in calls of at most 1,000; the count follows; a refusal is shown', async () => {
    const app = appOf('values');
    const id = await register(app, 'values', { filter: { 'data.owner': { $in_set: true } } });
    const page = await openEndpoint(await tokenFor(app), id);
    await page.getByText('Value set: 0 values').waitFor();
    const values = page.getByLabel('Values', { exact: true });
    const calls: number[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/webhook/values') && r.method() === 'POST') {
        const body = JSON.parse(r.postData() ?? '{}') as { add?: string[]; remove?: string[] };
        calls.push((body.add ?? body.remove ?? []).length);
      }
    });

    // 2,500 addresses, one a line, with commas and spaces mixed in.
    const addresses = Array.from({ length: 2500 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`);
    await values.fill(`${addresses.slice(0, 1200).join('\n')}\n${addresses.slice(1200).join(', ')}  `);
    await button(page, 'Add values').click();
    await page.getByText('Value set: 2,500 values').waitFor();
    expect(calls).toEqual([1000, 1000, 500]);
    expect(await setSize(app, id)).toBe(2500);
    expect(await values.inputValue()).toBe('');

    calls.length = 0;
    await values.fill(`${addresses[0]} ${addresses[1]},${addresses[2]}`);
    await button(page, 'Remove values').click();
    await page.getByText('Value set: 2,497 values').waitFor();
    expect(calls).toEqual([3]);
    expect(await setSize(app, id)).toBe(2497);

    // A value the service refuses (longer than 256 characters): the reason as text, nothing changed.
    await values.fill(`0xabc ${'x'.repeat(257)}`);
    await button(page, 'Add values').click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/HTTP 400/);
    expect(await setSize(app, id)).toBe(2497);
    await page.getByText('Value set: 2,497 values').waitFor();

    // The set is what $in_set reads: Try filter finds the catalog example's owner once it is in (any case).
    await button(page, 'Edit').click();
    await page.getByLabel('Example event type').selectOption('NEW_NFT');
    await button(page, 'Try filter').click();
    await expect.poll(() => page.locator('.try-outcome').textContent()).toBe('Does not match');
    await values.fill(OWNER.toUpperCase().replace('0X', '0x'));
    await button(page, 'Add values').click();
    await page.getByText('Value set: 2,498 values').waitFor();
    await button(page, 'Try filter').click();
    await expect.poll(() => page.locator('.try-outcome').textContent()).toBe('Matches');
  });

  it('a set of 100,000 values refuses more: the 409 is shown as text, and the count stays', async () => {
    const app = appOf('full');
    const id = await register(app, 'full', { filter: { 'data.owner': { $in_set: true } } });
    for (let chunk = 0; chunk < 100; chunk += 1) {
      const add = Array.from({ length: 1000 }, (_, i) => `v${chunk * 1000 + i}`);
      const res = await api(app, 'POST', `${PATH}/values`, { webhook_id: id, add });
      expect(res.status, res.text).toBe(200);
    }
    const page = await openEndpoint(await tokenFor(app), id);
    await page.getByText('Value set: 100,000 values').waitFor();
    await page.getByLabel('Values', { exact: true }).fill('v1\nnew-one');
    await button(page, 'Add values').click();
    await page.getByRole('alert').filter({ hasText: 'HTTP 409' }).waitFor();
    expect(await setSize(app, id)).toBe(100_000);
    expect(await page.getByText('Value set: 100,000 values').count()).toBe(1);
    // Removing still works at the limit.
    await page.getByLabel('Values', { exact: true }).fill('v1, v2');
    await button(page, 'Remove values').click();
    await page.getByText('Value set: 99,998 values').waitFor();
    expect(await setSize(app, id)).toBe(99_998);
  }, 120_000);

  it('a read-only link shows the filter, ordering and set size, and no control that edits them', async () => {
    const app = appOf('ro');
    const filter = { 'data.token_id': { $gte: '100', $lt: '200' }, 'data.owner': { $in_set: true } };
    const id = await register(app, 'ro', { filter, ordering: 'fifo' });
    expect((await api(app, 'POST', `${PATH}/values`, { webhook_id: id, add: ['a', 'b', 'c'] })).status).toBe(200);
    const page = await openEndpoint(await tokenFor(app, 'webhooks:read'), id);
    await page.getByText('Value set: 3 values').waitFor();
    expect(JSON.parse((await fact(page, 'Filter').textContent()) ?? '')).toEqual(filter);
    expect(await fact(page, 'Ordering').textContent()).toBe('FIFO');
    // The values are listed, without a Remove button.
    await page.getByRole('list', { name: "The set's values" }).getByText('a', { exact: true }).waitFor();
    expect(await page.getByRole('list', { name: "The set's values" }).locator('li').allInnerTexts()).toEqual([
      'a',
      'b',
      'c',
    ]);
    expect(await page.getByRole('button', { name: /^Remove / }).count()).toBe(0);
    for (const name of ['Edit', 'Save', 'Add values', 'Remove values', 'Try filter']) {
      expect(await button(page, name).count(), name).toBe(0);
    }
    for (const label of ['Values', 'Filter', 'Ordering']) {
      expect(await page.getByLabel(label, { exact: true }).count(), label).toBe(0);
    }
    expect(await page.locator('textarea, select[name="ordering"]').count()).toBe(0);
  });

  it('what an endpoint receives is said once, in words, from its event types and its filter together', async () => {
    const app = appOf('receives');
    const cases: [number, string][] = [
      [await register(app, 'all'), 'All events'],
      [await register(app, 'types', { event_types: ['NEW_NFT', 'MOD_NFT'] }), 'NEW_NFT and MOD_NFT events'],
      [
        await register(app, 'priced', { filter: { type: 'NEW_NFT', 'data.price': { $gte: 100 } } }),
        'NEW_NFT events whose data.price ≥ 100',
      ],
      [
        await register(app, 'narrowed', {
          event_types: ['NEW_NFT', 'MOD_NFT'],
          filter: { type: { $in: ['MOD_NFT', 'BURN'] } },
        }),
        'MOD_NFT events',
      ],
      [
        // A number past a double's digits, sent and shown as written.
        await registerText(app, 'wei', '"filter":{"data.price":{"$gt":12345678901234567890123}}'),
        'Events of every type whose data.price > 12345678901234567890123',
      ],
      [
        await register(app, 'either', {
          filter: {
            $or: [{ 'data.contract': CONTRACT }, { 'data.owner': { $in_set: true } }],
            $not: { 'data.to': { $exists: true } },
            'data.token_id': { $gte: '1000', $lte: '1999' },
          },
        }),
        `Events of every type whose (data.contract is "${CONTRACT}" or data.owner is in the value set) and not (data.to is present) and data.token_id ≥ 1000 and data.token_id ≤ 1999`,
      ],
      [
        await register(app, 'disjoint', { event_types: ['NEW_NFT'], filter: { type: 'MOD_NFT' } }),
        'No events: its filter names no type among its event types',
      ],
    ];
    const { page } = await newPage();
    await page.goto(`${base}/portal/#token=${await tokenFor(app)}`);
    const rows = rowsOf(page, 'Endpoints');
    await expect.poll(() => rows.count()).toBe(cases.length);
    for (const [id, text] of cases) {
      const url = String((await stored(app, id)).url);
      const row = rows.filter({ has: page.getByRole('link', { name: url, exact: true }) });
      expect(await row.locator('td[data-label="Receives"]').textContent(), url).toBe(text);
    }
    // On an endpoint's page, once: no Event types beside a filter that limits the type.
    await page.getByRole('link', { name: 'https://hooks.example.com/priced', exact: true }).click();
    await fact(page, 'Receives').getByText('NEW_NFT events whose data.price ≥ 100', { exact: true }).waitFor();
    expect(await fact(page, 'Event types').count()).toBe(0);
    expect(await page.getByText('Event types: All').count()).toBe(0);
  });

  it('the value set panel shows only where the filter uses $in_set: its values paged, searched by prefix and removed one by one', async () => {
    const app = appOf('set-list');
    const plain = await register(app, 'plain', { filter: { type: 'NEW_NFT' } });
    const page = await openEndpoint(await tokenFor(app), plain);
    const panel = page.getByRole('region', { name: 'Value set' });
    expect(await panel.textContent()).toBe('No value set: add $in_set to the filter to use one.');
    expect(await page.getByLabel('Values', { exact: true }).count()).toBe(0);
    expect(await page.getByRole('list', { name: "The set's values" }).count()).toBe(0);

    // 250 values: pages of 100, in order.
    const id = await register(app, 'owners', { filter: { 'data.owner': { $in_set: true } } });
    const values = Array.from({ length: 250 }, (_, i) => `v${String(i).padStart(3, '0')}`);
    for (let i = 0; i < values.length; i += 100) {
      expect((await api(app, 'POST', `${PATH}/values`, { webhook_id: id, add: values.slice(i, i + 100) })).status).toBe(
        200,
      );
    }
    await page.goto(`${base}/portal/endpoints/${id}`);
    const list = page.getByRole('list', { name: "The set's values" });
    const items = list.locator('li code');
    await page.getByText('Value set: 250 values').waitFor();
    await expect.poll(() => items.count()).toBe(100);
    expect(await items.allInnerTexts()).toEqual(values.slice(0, 100));
    await button(page, 'Load more values').click();
    await expect.poll(() => items.count()).toBe(200);
    await button(page, 'Load more values').click();
    await expect.poll(() => items.count()).toBe(250);
    expect(await items.allInnerTexts()).toEqual(values);
    expect(await button(page, 'Load more values').count()).toBe(0);

    // Search: the values that start with what is typed.
    const search = page.getByRole('searchbox', { name: 'Search values' });
    await search.fill('v24');
    await expect.poll(() => items.allInnerTexts()).toEqual(values.slice(240, 250));
    await page.getByText('10 of the 250 values loaded start with “v24”.').waitFor();
    await search.fill('V00');
    await expect.poll(() => items.allInnerTexts()).toEqual(values.slice(0, 10));

    // Remove one: gone from the list and from the set.
    await page.getByRole('button', { name: 'Remove v003', exact: true }).click();
    await page.getByText('Value set: 249 values').waitFor();
    await expect.poll(() => items.allInnerTexts()).toEqual(values.slice(0, 10).filter((v) => v !== 'v003'));
    expect(await setSize(app, id)).toBe(249);
    const left = await api<{ values: string[] }>(app, 'GET', `${PATH}/values?webhook_id=${id}&limit=5`);
    expect(left.value.values).toEqual(['v000', 'v001', 'v002', 'v004', 'v005']);
  });

  it('Try filter: the example event is the catalog example of the chosen type, and an edit of it is what is tried', async () => {
    const app = appOf('try-edit');
    const id = await register(app, 'try-edit');
    const catalog = await api<{ event_types: { type: string; example: unknown }[] }>(
      app,
      'GET',
      '/v1.0/app/nft/event-types',
    );
    const exampleOf = (type: string) => catalog.value.event_types.find((t) => t.type === type)?.example;
    const page = await openEndpoint(await tokenFor(app), id);
    await button(page, 'Edit').click();
    const example = page.getByLabel('Example event', { exact: true });
    const outcome = page.locator('.try-outcome');
    await page.getByLabel('Example event type').selectOption('NEW_NFT');
    await expect
      .poll(async () => JSON.parse((await example.inputValue()) || 'null'))
      .toEqual({
        type: 'NEW_NFT',
        data: exampleOf('NEW_NFT'),
      });
    const tried: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/webhook/filter/test')) tried.push(r.postData() ?? '');
    });

    // The catalog's token 1002 is below the floor: no match. Edited to 2001 (typed as a string
    // of digits, as token ids go): a match; the edit is what was sent.
    await page.getByLabel('Filter', { exact: true }).fill('{"data.token_id": {"$gte": "2000"}}');
    await button(page, 'Try filter').click();
    await expect.poll(() => outcome.textContent()).toBe('Does not match');
    // The service's why, as the page says it.
    await expect
      .poll(() => page.locator('.try-why').textContent())
      .toBe('data.token_id ≥ 2000 does not hold: data.token_id is "1002".');
    await example.fill((await example.inputValue()).replace('"token_id": "1002"', '"token_id": "2001"'));
    await button(page, 'Try filter').click();
    await expect.poll(() => outcome.textContent()).toBe('Matches');
    expect(JSON.parse(tried[1] ?? '{}').event).toEqual({
      type: 'NEW_NFT',
      data: { ...(exampleOf('NEW_NFT') as object), token_id: '2001' },
    });
    // Another type brings its own example back.
    await page.getByLabel('Example event type').selectOption('MEMBER_NFT_ADD');
    expect(JSON.parse(await example.inputValue())).toEqual({
      type: 'MEMBER_NFT_ADD',
      data: exampleOf('MEMBER_NFT_ADD'),
    });

    // An example that is no event is refused by the page, nothing sent.
    await example.fill('{"type": "NEW_NFT", "data": [1]}');
    await button(page, 'Try filter').click();
    await page.getByRole('alert').filter({ hasText: 'Example event: "data" must be a JSON object.' }).waitFor();
    expect(tried.length).toBe(2);
    expect((await stored(app, id)).filter).toBeNull();
  });

  it("Try filter: a miss says which condition failed and what the event had, from the reply's why", async () => {
    // The shape the service answers a miss with (its `why`), given here by the browser's route:
    // this checks how the page says it, whatever the service under test answers.
    const app = appOf('try-why');
    const id = await register(app, 'try-why');
    const page = await openEndpoint(await tokenFor(app), id);
    await button(page, 'Edit').click();
    const answers = [
      { path: 'data.token_id', operator: '$gte', expected: '2000', found: '1002' },
      { path: 'data.price', operator: '$lt', expected: 5 },
      { path: 'data.to', operator: '$in_set', expected: true, found: '0xabc' },
    ];
    let n = 0;
    await page.route(`${base}/v1.0/app/nft/webhook/filter/test`, (route) =>
      route.fulfill({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({ return: 0, message: 'success', value: { matches: false, why: answers[n++] } }),
      }),
    );
    const why = page.locator('.try-why');
    await page.getByLabel('Filter', { exact: true }).fill('{"data.token_id": {"$gte": "2000"}}');
    await button(page, 'Try filter').click();
    await expect.poll(() => why.textContent()).toBe('data.token_id ≥ 2000 does not hold: data.token_id is "1002".');
    expect(await page.locator('.try-outcome').textContent()).toBe('Does not match');
    await button(page, 'Try filter').click();
    await expect.poll(() => why.textContent()).toBe('data.price < 5 does not hold: data.price is missing.');
    await button(page, 'Try filter').click();
    await expect.poll(() => why.textContent()).toBe('data.to is in the value set does not hold: data.to is "0xabc".');
  });

  it('at 390 px the page stays usable: no sideways scroll, the filter and value controls in reach', async () => {
    const app = appOf('narrow');
    const filter = { $or: [{ 'data.contract': CONTRACT }, { 'data.owner': { $in_set: true } }] };
    const id = await register(app, 'narrow', { filter });
    const page = await openEndpoint(await tokenFor(app), id, { width: 390, height: 844 });
    const fits = async () =>
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await fits();
    await button(page, 'Edit').click();
    await page.getByLabel('Filter', { exact: true }).waitFor();
    await fits();
    for (const control of [
      page.getByLabel('Filter', { exact: true }),
      page.getByLabel('Ordering', { exact: true }),
      button(page, 'Try filter'),
      button(page, 'Save'),
      page.getByLabel('Values', { exact: true }),
      button(page, 'Add values'),
    ]) {
      await control.scrollIntoViewIfNeeded();
      const box = await control.boundingBox();
      expect(box).not.toBeNull();
      expect((box?.x ?? -1) >= 0 && (box?.x ?? 0) + (box?.width ?? 0) <= 390).toBe(true);
    }
    await page.getByLabel('Values', { exact: true }).fill(CONTRACT);
    await button(page, 'Add values').click();
    await page.getByText('Value set: 1 value', { exact: true }).waitFor();
  });
});
