import { env, SELF } from 'cloudflare:test';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { insertWebhook } from './helpers/database';
import { MAX_BODY_BYTES, ORIGIN, PATH } from './helpers/requests';
import { tokenFor } from './helpers/tokens';

/** The body limit the docs promise (8 KiB). */

const OP_CODE: Record<string, number> = { GET: 64060, POST: 64061, PUT: 64062, PATCH: 64062, DELETE: 64063 };
const FAILURE_STATUSES = [400, 404, 409, 413, 415, 429];

interface Attempt {
  method: string;
  path: string;
  auth: string | null;
  query: string | null;
  contentType: string | null;
  body: string | null;
  /** The webhook the request names, as decimal text, when it names one. */
  target: string | null;
}

let tokens: Record<'a' | 'b' | 'expired' | 'forged', string>;
let ids: string[] = [];

/** Keeps a few live webhooks of both applications around, since DELETEs consume them. */
async function replenish() {
  const { results } = await env.DB.prepare('SELECT CAST(webhook_id AS TEXT) AS id FROM webhooks').all<{ id: string }>();
  ids = results.map((r) => r.id);
  while (ids.length < 8)
    ids.push(await insertWebhook(ids.length % 2 === 0 ? 'app-a' : 'app-b', { enabled: ids.length % 3 === 0 }));
}

beforeAll(async () => {
  tokens = {
    a: await tokenFor('app-a', { exp: Math.floor(Date.now() / 1000) + 3600 }),
    b: await tokenFor('app-b', { exp: Math.floor(Date.now() / 1000) + 3600 }),
    expired: await tokenFor('app-a', { exp: 1_000_000 }),
    forged: await tokenFor('app-a', {}, { secret: 'not-the-secret-not-the-secret-00' }),
  };
  await replenish();
});

const printable = fc.string({
  unit: fc.constantFrom(...' !"#$%&\'()*+,-./0123456789:;<=>?@ABCZabcz[\\]^_`{|}~'),
  maxLength: 40,
});

/** Things that may or may not be a webhook id, as text. */
const idText = fc.oneof(
  { weight: 5, arbitrary: fc.constant('LIVE') }, // replaced by a live id when the request is built
  fc.bigInt({ min: 1n, max: 9223372036854775807n }).map(String),
  fc.constantFrom('0', '-1', '+5', '1.0', '1e3', '0x10', '9223372036854775808', '007', ' 1', ''),
  printable,
);

/** A generated request, before the chosen id is put in: `live` picks a live webhook for `LIVE`. */
type Generated = Omit<Attempt, 'target'> & { id: string; live: number; idAsNumber: boolean };

const attempt: fc.Arbitrary<Generated> = fc.record({
  method: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('PUT', 'DELETE', 'GET', 'POST', 'PATCH') },
    fc.constantFrom('TRACE', 'OPTIONS', 'HEAD'),
  ),
  path: fc.oneof(
    { weight: 10, arbitrary: fc.constant(PATH) },
    fc.constantFrom(`${PATH}/`, '/', '/v1.0/app/nft', PATH.toUpperCase(), `${PATH}/1`),
    printable.map((s) => `/${encodeURIComponent(s)}`),
  ),
  auth: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('a', 'b').map((k) => `Bearer ${tokens[k as 'a' | 'b']}`) },
    fc.constantFrom('expired', 'forged').map((k) => `Bearer ${tokens[k as 'expired' | 'forged']}`),
    fc.constantFrom(null, 'Bearer', 'Basic dXNlcjpwYXNz', 'Bearer a.b.c'),
    printable.map((s) => `Bearer ${s}`),
  ),
  id: idText,
  live: fc.nat(),
  idAsNumber: fc.boolean(),
  query: fc.oneof(
    { weight: 6, arbitrary: fc.constant('webhook_id=ID') },
    fc.constantFrom(null, 'webhook_id=ID&webhook_id=ID', 'id=ID', 'webhook_id=ID&x=1'),
    printable.map((s) => encodeURIComponent(s)),
  ),
  contentType: fc.oneof(
    { weight: 6, arbitrary: fc.constant('application/json') },
    fc.constantFrom(null, 'text/plain', 'application/json; charset=utf-8', 'application/xml'),
  ),
  body: fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .record(
          {
            is_enabled: fc.oneof(fc.boolean(), fc.jsonValue()),
            url: fc.oneof(
              fc.webUrl({ validSchemes: ['https', 'http'], withQueryParameters: true, withFragments: true }),
              fc.constantFrom(
                'https://hooks.example.com/a',
                'https://127.0.0.1/x',
                'https://[::1]/',
                'https://intranet',
              ),
              fc.jsonValue(),
            ),
            extra: fc.jsonValue(),
          },
          { requiredKeys: [] },
        )
        .map((o) => JSON.stringify(o)),
    },
    fc.jsonValue().map((v) => JSON.stringify(v)),
    printable,
    fc.constantFrom(null, '', `{"webhook_id": 1, "pad": "${'x'.repeat(MAX_BODY_BYTES)}"}`),
  ),
});

/** Builds the request: `ID` placeholders become the chosen id, a body object gets `webhook_id`. */
function build(a: Generated): Attempt {
  const id = a.id === 'LIVE' ? (ids[a.live % ids.length] as string) : a.id;
  const digits = /^\d+$/.test(id);
  let body = a.body;
  if (body?.startsWith('{"') && !body.includes('"pad"')) {
    const value = a.idAsNumber && digits ? id : JSON.stringify(id);
    body = `{"webhook_id":${value},${body.slice(1)}`;
  }
  return {
    method: a.method,
    path: a.path,
    auth: a.auth,
    query: a.query === null ? null : a.query.replaceAll('ID', encodeURIComponent(id)),
    contentType: a.contentType,
    body,
    target: digits && BigInt(id) > 0n ? BigInt(id).toString() : null,
  };
}

async function tables() {
  const [webhooks, audit] = await env.DB.batch<Record<string, unknown>>([
    env.DB.prepare(
      'SELECT CAST(webhook_id AS TEXT) AS id, app_id, url, is_enabled, created_at, updated_at FROM webhooks',
    ),
    env.DB.prepare('SELECT CAST(webhook_id AS TEXT) AS id, action FROM webhook_audit ORDER BY audit_id'),
  ]);
  return {
    rows: new Map(webhooks!.results.map((r) => [r.id as string, JSON.stringify(r)])),
    audit: audit!.results as { id: string; action: string }[],
  };
}

describe('properties over arbitrary requests', () => {
  it('every reply is an envelope whose status and code agree, and only an addressed row changes', async () => {
    await fc.assert(
      fc.asyncProperty(attempt, async (generated) => {
        await replenish();
        const a = build(generated);
        const headers: Record<string, string> = {};
        if (a.auth !== null) headers.authorization = a.auth;
        if (a.contentType !== null) headers['content-type'] = a.contentType;
        const sendsBody = a.body !== null && !['GET', 'HEAD'].includes(a.method);
        const before = await tables();

        const res = await SELF.fetch(`${ORIGIN}${a.path}${a.query === null ? '' : `?${a.query}`}`, {
          method: a.method,
          headers,
          body: sendsBody ? a.body : undefined,
        });

        // The envelope, with a status that agrees with its code.
        expect(res.headers.get('content-type')).toBe('application/json');
        expect(res.headers.get('cache-control')).toBe('no-store');
        expect(res.headers.get('x-request-id')).toBeTruthy();
        const text = await res.text();
        const onPath = a.path === PATH;
        if (a.method === 'HEAD') {
          expect(text).toBe('');
        } else {
          const body = JSON.parse(text) as Record<string, unknown>;
          // `value` only on a successful GET, POST or PATCH.
          const withValue =
            ((a.method === 'GET' || a.method === 'PATCH') && res.status === 200) ||
            (a.method === 'POST' && res.status === 201);
          expect(Object.keys(body).sort()).toEqual(withValue ? ['message', 'return', 'value'] : ['message', 'return']);
          const code = body.return;
          if (!onPath) expect([res.status, code]).toEqual([404, 404]);
          else if (!(a.method in OP_CODE)) expect([res.status, code]).toEqual([405, 405]);
          else if (res.status === 200 || res.status === 201) {
            expect(res.status).toBe(a.method === 'POST' ? 201 : 200);
            expect({ return: body.return, message: body.message }).toEqual({ return: 0, message: 'success' });
          } else if (res.status === 401) expect(body).toEqual({ return: 20004, message: 'Invalid jwt token' });
          else {
            expect(FAILURE_STATUSES).toContain(res.status); // never a 5xx without injected faults
            expect(code).toBe(OP_CODE[a.method]);
          }
        }
        if (!onPath) expect(res.status).toBe(404);

        // Nothing changes but the row a successful PUT or DELETE named, or the one a POST made.
        const after = await tables();
        const changed = new Set(
          [...before.rows.keys(), ...after.rows.keys()].filter((k) => before.rows.get(k) !== after.rows.get(k)),
        );
        const newAudit = after.audit.slice(before.audit.length);
        if (res.status === 201 && onPath) {
          const created = [...changed];
          expect(created).toHaveLength(1);
          expect(before.rows.has(created[0] as string)).toBe(false);
          expect(newAudit).toEqual([{ id: created[0], action: 'create' }]);
        } else if (res.status === 200 && onPath && a.method !== 'GET') {
          for (const id of changed) expect(id).toBe(a.target);
          expect(newAudit.length).toBeLessThanOrEqual(1);
          for (const record of newAudit) expect(record.id).toBe(a.target);
        } else {
          expect(changed.size).toBe(0);
          expect(newAudit).toEqual([]);
        }
      }),
      { numRuns: 250 },
    );
  }, 60_000);
});
