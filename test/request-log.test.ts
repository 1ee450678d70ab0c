import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { insertWebhook } from './helpers/database';
import { fetchWith, fetchWorker, URL_ } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Every line the Worker writes to the console while `run` runs, at any level. */
async function captureConsole(run: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      lines.push(args.map(String).join(' '));
    });
  }
  await run();
  return lines;
}

const requestLines = (lines: string[]) =>
  lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request');

describe('request log', () => {
  it('writes one JSON line per request with what an operator needs', async () => {
    const id = await insertWebhook('app-a', { enabled: true });
    const token = await tokenFor('app-a');
    const lines = await captureConsole(async () => {
      await fetchWith(
        {},
        new Request(URL_, {
          method: 'PUT',
          headers: { ...bearer(token), 'content-type': 'application/json', 'x-request-id': 'log-1' },
          body: JSON.stringify({ webhook_id: id, is_enabled: false }),
        }),
      );
      await fetchWith(
        {},
        new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: { 'x-request-id': 'log-2' } }),
      );
      await fetchWith({}, new Request(`${URL_}/nope`, { headers: { 'x-request-id': 'log-3' } }));
    });

    const [put, rejected, unknown] = requestLines(lines);
    expect(requestLines(lines)).toHaveLength(3);
    expect(put).toMatchObject({
      level: 'info',
      request_id: 'log-1',
      method: 'PUT',
      op: 'update',
      app_id: 'app-a',
      webhook_id: id,
      status: 200,
      return: 0,
      d1_attempts: 1,
    });
    expect(put?.duration_ms).toEqual(expect.any(Number));
    expect(rejected).toMatchObject({
      request_id: 'log-2',
      op: 'delete',
      app_id: null,
      webhook_id: null,
      status: 401,
      return: 20004,
      detail: 'missing bearer token',
      d1_attempts: 0,
    });
    expect(unknown).toMatchObject({ request_id: 'log-3', op: null, status: 404, return: 404 });
  });

  it('never writes the secret, a token or the Authorization header', async () => {
    const secret = 'S3cr3t-that-must-never-be-logged-0123456789';
    const id = await insertWebhook('app-a');
    const valid = await tokenFor('app-a', {}, { secret });
    const forged = await tokenFor('app-a', {}, { secret: 'another-secret-another-secret-0000' });
    const broken = {
      ...env,
      JWT_SECRET: secret,
      DB: {
        prepare: () => {
          throw new Error('D1_ERROR: boom');
        },
        batch: () => Promise.reject(new Error('D1_ERROR: boom')),
      },
    };

    const lines = await captureConsole(async () => {
      const bindings = { ...env, JWT_SECRET: secret };
      for (const token of [valid, forged, `${valid}x`, 'garbage']) {
        await fetchWorker(
          new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(token) }),
          bindings,
        );
        await fetchWorker(
          new Request(`${URL_}?webhook_id=${id}&access_token=${token}`, {
            method: 'PUT',
            headers: { ...bearer(token), 'content-type': 'application/json' },
            body: `{"webhook_id":${id},"t":"${token}"}`,
          }),
          bindings,
        );
      }
      await fetchWorker(new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(valid) }), broken);
      await fetchWorker(new Request(`${URL_}?webhook_id=${id}`, { method: 'DELETE', headers: bearer(valid) }), {
        ...env,
        JWT_SECRET: secret,
        JWT_PUBLIC_KEY: secret,
      });
    });

    expect(lines.length).toBeGreaterThan(10);
    const all = lines.join('\n');
    expect(all).not.toContain(secret);
    for (const token of [valid, forged]) {
      for (const part of token.split('.')) expect(all).not.toContain(part);
    }
    expect(all.toLowerCase()).not.toContain('bearer');
    expect(all).not.toContain('access_token');
  });
});
