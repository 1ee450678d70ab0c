import { env, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import catalog from '../src/events/catalog.json';
import { countingDb } from './helpers/database';
import { expectEnvelope } from './helpers/replies';
import { fetchWith, ORIGIN } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

const URL_TYPES = `${ORIGIN}/v1.0/app/nft/event-types`;

interface Entry {
  type: string;
  description: string;
  example: Record<string, unknown>;
}

describe('GET /v1.0/app/nft/event-types', () => {
  it('answers the catalog file, for any application token, with no storage and no bookmark', async () => {
    const counted = countingDb(env.DB);
    const res = await fetchWith(
      { DB: counted.db },
      new Request(URL_TYPES, { headers: { ...bearer(await tokenFor('catalog-app')), 'x-request-id': 'cat-1' } }),
    );
    const text = await res.text();
    const body = JSON.parse(text) as { return: number; message: string; value: { event_types: Entry[] } };
    expect(res.status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['message', 'return', 'value']);
    expect([body.return, body.message]).toEqual([0, 'success']);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-request-id')).toBe('cat-1');
    expect(res.headers.get('x-d1-bookmark')).toBeNull();
    expect(counted.calls()).toBe(0);
    expect(body.value.event_types).toEqual(catalog);
    const types = body.value.event_types.map((e) => e.type);
    expect(types).toEqual(
      expect.arrayContaining([
        'NEW_NFT',
        'MOD_NFT',
        'MEMBER_NFT_ADD',
        'MEMBER_NFT_SUB',
        'MEMBER_NFT_MERGE_ADD',
        'webhook.test',
      ]),
    );
    expect(new Set(types).size).toBe(types.length);
    for (const entry of body.value.event_types) {
      expect(Object.keys(entry).sort()).toEqual(['description', 'example', 'type']);
      expect(entry.type).toMatch(/^[A-Za-z0-9_.]{1,64}$/);
      expect(entry.description.length).toBeGreaterThan(10);
      expect(typeof entry.example).toBe('object');
      // NFT ids are strings: no double rounds them.
      if ('token_id' in entry.example) expect(typeof entry.example.token_id).toBe('string');
    }
    expect(body.value.event_types.find((e) => e.type === 'NEW_NFT')?.example).toMatchObject({
      contract: expect.any(String),
      owner: expect.any(String),
    });
  });

  it('answers a read-only token, and 401 without a token', async () => {
    const ro = await SELF.fetch(URL_TYPES, {
      headers: bearer(await tokenFor('catalog-app', { scope: 'webhooks:read' })),
    });
    expect(ro.status).toBe(200);
    await expectEnvelope(await SELF.fetch(URL_TYPES), 401, 20004, 'Invalid jwt token');
  });

  it('answers 405 with Allow: GET for other methods, and ignores query parameters', async () => {
    const res = await SELF.fetch(URL_TYPES, { method: 'POST', headers: bearer(await tokenFor('catalog-app')) });
    expect(res.headers.get('allow')).toBe('GET');
    await expectEnvelope(res, 405, 405, 'method not allowed');
    const q = await SELF.fetch(`${URL_TYPES}?type=NEW_NFT&x=1`, { headers: bearer(await tokenFor('catalog-app')) });
    expect(q.status).toBe(200);
  });
});
