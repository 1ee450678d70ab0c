// docs/openapi.json on an event's journey: GET /v1.0/app/nft/event.
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { JOURNEY_PATH } from '../src/deliveries/routes';
import { deliverDue } from './helpers/objects';
import { expectEachDocumented, expectOtherMethodsRefused, limited } from './helpers/openapi';
import { receiver } from './helpers/receiver';
import { expectValue } from './helpers/replies';
import { fetchWith, ORIGIN, publishEvent, registerWebhook } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('docs/openapi.json: an event’s journey', () => {
  let token: string;
  let eventId: string;
  const journey = (query: string, headers: Record<string, string>, bindings: Record<string, unknown> = {}) =>
    fetchWith(bindings, new Request(`${ORIGIN}${JOURNEY_PATH}?${query}`, { headers }));

  beforeAll(async () => {
    token = await tokenFor('app-journey');
    receiver();
    const hook = await registerWebhook('app-journey');
    ({ eventId } = await publishEvent('app-journey'));
    await deliverDue(hook.id);
  });

  it('answers every documented status as documented', async () => {
    const headers = bearer(token);
    const values = await expectEachDocumented(
      'get',
      JOURNEY_PATH,
      [
        ['200', () => journey(`event_id=${eventId}`, headers)],
        [
          '200 read-only',
          async () => journey(`event_id=${eventId}`, bearer(await tokenFor('app-journey', { scope: 'webhooks:read' }))),
        ],
        ['400 missing', () => journey('', headers)],
        ['400 malformed', () => journey('event_id=evt_1', headers)],
        ['400 repeated', () => journey(`event_id=${eventId}&event_id=${eventId}`, headers)],
        ['401', () => journey(`event_id=${eventId}`, bearer('nope'))],
        [
          '404 another application',
          async () => journey(`event_id=${eventId}`, bearer(await tokenFor('app-journey-2'))),
        ],
        ['404 unknown', () => journey(`event_id=evt_${'a'.repeat(32)}`, headers)],
        ['429', () => journey(`event_id=${eventId}`, headers, limited)],
      ],
      [],
    );
    expect(values.get('200')).toMatchObject({ event_id: eventId, type: 'NEW_NFT', data: { token: '1' } });
    expect(values.get('200 read-only')).toEqual(values.get('200'));
  });

  it('refuses other methods with 405', async () => {
    await expectOtherMethodsRefused(
      JOURNEY_PATH,
      `?event_id=${eventId}`,
      ['POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'],
      token,
    );
    // The objects alone answer it: no D1, so no X-D1-Bookmark.
    expect(
      (await expectValue(await journey(`event_id=${eventId}`, bearer(token)), 200, { usedD1: false })).value,
    ).toBeDefined();
  });
});
