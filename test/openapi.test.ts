// docs/openapi.json as a whole: its paths and methods, its codes, and the replies every path shares.
// Each resource's replies and bodies are checked in openapi-<resource>.test.ts.
import { SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { APPLICATION_PATH } from '../src/applications/routes';
import {
  DELIVERY_PATH,
  JOURNEY_PATH,
  RECOVER_PATH,
  RESEND_PATH,
  STATS_PATH,
  TEST_EVENT_PATH,
} from '../src/deliveries/routes';
import { EVENT_PATH, EVENT_TYPES_PATH, EVENTS_PATH } from '../src/events/routes';
import { FILTER_TEST_PATH, VALUES_PATH } from '../src/filters/routes';
import { Code, envelope } from '../src/http/envelope';
import { allowedMethods, operationCode } from '../src/http/operations';
import { SECRET_PATH } from '../src/webhooks/routes';
import { doc, documentedMethods, expectDocumented, type Method, type Node, paths, resolve } from './helpers/openapi';
import { ORIGIN, PATH, URL_ } from './helpers/requests';

describe('docs/openapi.json', () => {
  it('documents the reply to an unknown path and to another method', async () => {
    await expectDocumented(await SELF.fetch(`${ORIGIN}/openapi.json`), 'unknown-path');
    await expectDocumented(await SELF.fetch(URL_, { method: 'TRACE' }), 'other-method');
  });

  it('names every code with the message the Worker sends', async () => {
    const schemas = doc.components.schemas as Record<
      string,
      { properties?: { return?: { const: number }; message?: { const: string } } }
    >;
    const documented = Object.values(schemas)
      .filter((s) => s.properties?.return !== undefined)
      .map((s) => ({ return: s.properties?.return?.const, message: s.properties?.message?.const }));
    const sent = await Promise.all(
      Object.values(Code)
        .filter((code) => code !== Code.internal)
        .map(async (code) => envelope(200, code, 'x').json()),
    );
    expect(documented).toEqual(expect.arrayContaining(sent));
    expect(sent).toEqual(expect.arrayContaining(documented));
  });

  it("documents every method of each path, and gives each operation's failures its code", () => {
    expect(Object.keys(paths)).toEqual([
      PATH,
      SECRET_PATH,
      DELIVERY_PATH,
      TEST_EVENT_PATH,
      RECOVER_PATH,
      EVENT_PATH,
      EVENTS_PATH,
      STATS_PATH,
      RESEND_PATH,
      EVENT_TYPES_PATH,
      VALUES_PATH,
      FILTER_TEST_PATH,
      APPLICATION_PATH,
      JOURNEY_PATH,
    ]);
    for (const [path, methods] of Object.entries(paths)) {
      expect(documentedMethods(path), path).toBe(allowedMethods(path));
      for (const [method, operation] of Object.entries(methods) as [Method, { responses: Node }][]) {
        for (const [status, response] of Object.entries(operation.responses)) {
          const { schema } = ((resolve(response) as Node).content as Node)['application/json'] as {
            schema: { properties?: { return?: { const?: number } }; oneOf?: unknown[] };
          };
          const expected =
            Number(status) < 400 ? 0 : status === '401' ? Code.invalidToken : operationCode(method.toUpperCase(), path);
          const codes = (schema.oneOf ?? [schema]).map((s) => (s as typeof schema).properties?.return?.const);
          expect(codes, `${method.toUpperCase()} ${path} ${status}`).toEqual(codes.map(() => expected));
        }
      }
    }
  });
});
