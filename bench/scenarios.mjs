// The benchmark's scenarios: each request made from a counter, so "existing" ids are never
// reused. A module of its own, so the load generator's thread can build the same requests.
// No imports beyond this file: the load generator's thread loads it for every slice.

export const PATH = '/v1.0/app/nft/webhook';

/** The application that owns seeded webhook `id` (the harness seeds them round robin). */
export const ownerOf = (id, apps) => `app-${(id - 1) % apps}`;

export const APPS = 100;
export const PER_APP = 600; // 60,000 webhooks
// POST registers into applications of its own, 50 webhooks each (under the cap of 100).
const POST_PER_APP = 50;
export const NEW_APPS = 2000; // enough for 100,000 POSTs

/** Where the platform publishes events. */
export const EVENT_PATH = '/v1.0/platform/nft/event';
/** Where the platform publishes batches of events. */
export const EVENTS_PATH = '/v1.0/platform/nft/events';
/**
 * Publishing: applications pub-0..pub-49, each with four webhooks (ids from 60,001, after the
 * seeded ones): two for every type, one for NEW_NFT among others, and one for another type only,
 * so each event makes three deliveries and the event_types filter is exercised.
 */
export const PUBLISH_APPS = 50;
export const PUBLISH_FIRST_ID = APPS * PER_APP + 1;
export const PUBLISH_EVENT_TYPES = ['null', 'null', '["NEW_NFT","NFT_TRANSFER"]', '["NFT_BURN"]'];

/**
 * The delivery log: webhooks 48,001..48,200 (two of each seeded application; no write scenario
 * touches them), 200 deliveries each (bench/harness.mjs addDeliveryLog), read a page of 20 at a time.
 */
export const DELIVERY_LOG_PATH = `${PATH}/delivery`;
export const DELIVERY_LOG_FIRST_ID = 48_001;
export const DELIVERY_LOG_WEBHOOKS = 200;
export const DELIVERY_LOG_PER_WEBHOOK = 200;

/** The `data` of a NEW_NFT event, about 300 bytes. */
export const nftData = (n) => ({
  chain_id: 1,
  contract: '0x5af0d9827e0c53e4799bb226655a1de152a425a5',
  token_id: String(1_000_000 + n),
  owner: `0x${n.toString(16).padStart(40, '0')}`,
  block_number: 19_000_000 + n,
  tx_hash: `0x${n.toString(16).padStart(64, '0')}`,
  metadata_uri: `ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/${n}.json`,
});

/**
 * Content filters: application `filter-app`, 100 webhooks (its cap), made through the API by the
 * bench (bench/harness.mjs addFilterApp) on two workers of the service alike, except that on the
 * one measured (`service`) each webhook has a filter (`filterOf`) and on its reference
 * (`unfiltered`) none. Webhook 0's value set holds FILTER_SET_SIZE addresses on both, added
 * FILTER_SET_PER_CALL a call before the measurement.
 */
export const FILTER_APP = 'filter-app';
export const FILTER_WEBHOOKS = 100;
export const FILTER_SET_SIZE = 100_000;
export const FILTER_SET_PER_CALL = 1_000;
const CONTRACTS = [
  '0x5a1f8e1b7c3d9a2e4f60718293a4b5c6d7e8f901',
  '0x8ba1f109551bd432803012645ac136ddd64dba72',
  '0x1f9840a85d5af5bf1d1762f925bdaddc4201f984',
  '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d',
];
/** The value set's `i`-th address (`0x` and 40 hex digits). */
export const setAddress = (i) => `0x${(0xa0000000 + i).toString(16).padStart(40, '0')}`;
/**
 * Webhook `k`'s filter, realistic NFT filters in turn: 0 the wallet service's set of addresses;
 * then a contract (written in capitals), a price floor in wei (0.1 to 9.9 ETH, a decimal string
 * past 2^53), a token id range, and collections as an `$or` of contracts.
 */
export function filterOf(k) {
  if (k === 0) return { type: 'MEMBER_NFT_ADD', 'data.to': { $in_set: true } };
  if (k % 4 === 1) return { 'data.contract': `0x${CONTRACTS[0].slice(2).toUpperCase()}` };
  if (k % 4 === 2) return { type: 'MEMBER_NFT_ADD', 'data.price': { $gte: `${k}00000000000000000` } };
  if (k % 4 === 3) return { 'data.token_id': { $gte: '1000000', $lt: String(2_000_000 + k) } };
  return { $or: CONTRACTS.slice(0, 3).map((contract) => ({ 'data.contract': contract })) };
}
/**
 * The data of a sale publishing to `filter-app` (about 300 bytes). `all`: every filter matches it
 * (the same 100 deliveries as without filters, plus every filter's work); otherwise about half
 * the deliveries do (contracts, prices, token ids and owners that vary with `n`).
 */
export function saleData(n, all) {
  const pick = all ? 0 : n % 4;
  return {
    member_id: `mbr_${n}`,
    contract: CONTRACTS[pick],
    token_id: String((all || n % 3 !== 0 ? 1_000_000 : 3_000_000) + (n % 1_000_000)),
    from: `0x${n.toString(16).padStart(40, '0')}`,
    to: all || n % 2 === 0 ? setAddress((n * 7919) % FILTER_SET_SIZE) : setAddress(FILTER_SET_SIZE + n),
    price: all ? '25000000000000000000' : `${(n % 100) + 1}00000000000000000`,
    tx_hash: `0x${n.toString(16).padStart(64, '0')}`,
  };
}

/**
 * The scenarios, given tokens for app-0..app-99 and for bench-new-0..bench-new-1999, and a
 * platform token (scope events:publish). `reference`: the worker the target compares with;
 * `baseline`: also measured against the release before (`--baseline <rev>`), which has the path;
 * `check`: what the probe asserts of the body, beyond the status.
 */
export function scenarioList({ tokens, newApps, platform }) {
  const tokenOf = (id) => tokens[Number(ownerOf(id, APPS).slice(4))];
  const forged = `${tokens[0].slice(0, -4)}AAAA`;
  const json = (token) => ({ 'content-type': 'application/json', authorization: `Bearer ${token}` });

  return [
    {
      name: 'GET one',
      baseline: true,
      reference: 'floor',
      min: 0.95,
      expect: 200,
      request: (n) => {
        const id = 1 + ((n * 7919) % (APPS * PER_APP));
        return { method: 'GET', path: `${PATH}?webhook_id=${id}`, headers: json(tokenOf(id)) };
      },
    },
    {
      name: 'GET list (page of 20)',
      baseline: true,
      reference: 'floor',
      min: 0.95,
      expect: 200,
      request: (n) => ({
        method: 'GET',
        path: PATH,
        headers: { ...json(tokens[n % APPS]), 'x-bench-app': `app-${n % APPS}` },
      }),
    },
    {
      name: 'POST registers',
      baseline: true,
      reference: 'floor',
      probe: 99_999, // the last application with a token
      min: 0.9,
      expect: 201,
      request: (n) => {
        const app = Math.floor(n / POST_PER_APP);
        return {
          method: 'POST',
          path: PATH,
          headers: { ...json(newApps[app]), 'x-bench-app': `bench-new-${app}` },
          body: JSON.stringify({ url: `https://hooks.example.com/bench/${n}` }),
        };
      },
    },
    {
      name: 'PUT changes state',
      baseline: true,
      reference: 'floor',
      min: 0.95,
      expect: 200,
      request: (n) => {
        const id = 1 + (n % 24_000);
        return {
          method: 'PUT',
          path: PATH,
          headers: json(tokenOf(id)),
          body: JSON.stringify({ webhook_id: id, is_enabled: id % 2 === 0 }),
        };
      },
    },
    {
      name: 'PUT same state',
      baseline: true,
      reference: 'floor',
      min: 0.95,
      expect: 200,
      request: (n) => {
        const id = 50_001 + (n % 10_000);
        return {
          method: 'PUT',
          path: PATH,
          headers: json(tokenOf(id)),
          body: JSON.stringify({ webhook_id: id, is_enabled: id % 2 === 1 }),
        };
      },
    },
    {
      name: 'DELETE existing',
      baseline: true,
      reference: 'floor',
      min: 0.9,
      expect: 200,
      request: (n) => {
        const id = 24_001 + (n % 24_000);
        return { method: 'DELETE', path: `${PATH}?webhook_id=${id}`, headers: json(tokenOf(id)) };
      },
    },
    {
      name: 'DELETE missing',
      baseline: true,
      reference: 'floor',
      min: 0.9,
      expect: 404,
      request: (n) => {
        const id = 100_001 + n;
        return { method: 'DELETE', path: `${PATH}?webhook_id=${id}`, headers: json(tokenOf(id)) };
      },
    },
    {
      // The first page (20 of 200, newest first) of one of 200 webhooks' deliveries.
      name: 'GET delivery log',
      reference: 'floor',
      min: 0.9,
      expect: 200,
      // The probe reads a real page: 20 deliveries and a cursor to the next.
      check: (body) => {
        const { value } = JSON.parse(body);
        if (value?.deliveries?.length !== 20 || typeof value.next_cursor !== 'string')
          throw new Error(`not a full page: ${body.slice(0, 300)}`);
      },
      request: (n) => {
        const id = DELIVERY_LOG_FIRST_ID + ((n * 7) % DELIVERY_LOG_WEBHOOKS);
        return { method: 'GET', path: `${DELIVERY_LOG_PATH}?webhook_id=${id}`, headers: json(tokenOf(id)) };
      },
    },
    {
      // Half the events carry a publisher id (each a new one), half none.
      name: 'publish event',
      baseline: true,
      reference: 'floor',
      min: 0.9,
      expect: 202,
      request: (n) => ({
        method: 'POST',
        path: EVENT_PATH,
        headers: json(platform),
        body: JSON.stringify({
          app_id: `pub-${n % PUBLISH_APPS}`,
          type: 'NEW_NFT',
          ...(n % 2 === 0 ? { id: `bench-${n}` } : {}),
          data: nftData(n),
        }),
      }),
    },
    {
      // 100 events of one application per request, each with its publisher id (a batch needs them).
      name: 'publish batch (100)',
      baseline: true,
      reference: 'floor',
      min: 0.9,
      expect: 202,
      request: (n) => ({
        method: 'POST',
        path: EVENTS_PATH,
        headers: json(platform),
        body: JSON.stringify({
          events: Array.from({ length: 100 }, (_, k) => ({
            app_id: `pub-${n % PUBLISH_APPS}`,
            type: 'NEW_NFT',
            id: `batch-${n}-${k}`,
            data: nftData(n * 100 + k),
          })),
        }),
      }),
    },
    // Applications publishing at once: every request to one application's object, against the
    // same load spread over eight applications (eight objects).
    ...[1, 8].map((apps) => ({
      name: `publish ${apps} app${apps === 1 ? '' : 's'}`,
      reference: 'floor',
      min: 0.9,
      expect: 202,
      request: (n) => ({
        method: 'POST',
        path: EVENT_PATH,
        headers: json(platform),
        body: JSON.stringify({ app_id: `pub-${n % apps}`, type: 'NEW_NFT', id: `apps${apps}-${n}`, data: nftData(n) }),
      }),
    })),
    // Content filters: the same publish to `filter-app` with its filters (service) and without
    // (unfiltered); every filter matching, then about half the deliveries.
    ...[true, false].map((all) => ({
      name: `filter: publish to 100 filtered webhooks (${all ? 'all match' : 'about half match'})`,
      reference: 'unfiltered',
      min: 0.9,
      // A publish makes up to 100 deliveries (about 10 publishes a second here): slices of 5 s,
      // and 4 connections, which keep the application's object busy without queueing for seconds.
      seconds: 10,
      connections: 4,
      expect: 202,
      request: (n) => ({
        method: 'POST',
        path: EVENT_PATH,
        headers: json(platform),
        body: JSON.stringify({
          app_id: FILTER_APP,
          type: 'MEMBER_NFT_ADD',
          id: `filter-${all ? 'all' : 'half'}-${n}`,
          data: saleData(n, all),
        }),
      }),
    })),
    {
      name: 'rejected token (PUT)',
      baseline: true,
      reference: 'constant',
      // Not slower than before the extension (0.55-0.75x measured then; see docs/performance.md).
      min: 0.55,
      expect: 401,
      request: (n) => ({
        method: 'PUT',
        path: PATH,
        headers: json(forged),
        body: JSON.stringify({ webhook_id: 1 + n, is_enabled: true }),
      }),
    },
    {
      name: 'rejected token (DELETE)',
      baseline: true,
      reference: 'constant',
      // Not slower than before the extension (0.55-0.75x measured then; see docs/performance.md).
      min: 0.55,
      expect: 401,
      request: (n) => ({ method: 'DELETE', path: `${PATH}?webhook_id=${1 + n}`, headers: json(forged) }),
    },
    {
      name: 'invalid input (PUT)',
      baseline: true,
      reference: 'constant',
      // Not slower than before the extension (0.55-0.75x measured then; see docs/performance.md).
      min: 0.55,
      expect: 400,
      request: (n) => ({
        method: 'PUT',
        path: PATH,
        headers: json(tokenOf(1 + (n % 100))),
        body: JSON.stringify({ webhook_id: `${n}.5`, is_enabled: true }),
      }),
    },
  ];
}
