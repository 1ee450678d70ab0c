// The application portal's serving (src/portal/serve.ts): its page and assets from the Workers
// static assets binding, with the security headers on every reply; its own routes answered with
// the page; anything else under /portal/ the 404 envelope. The browser journeys are in
// test/http/portal.test.ts.
import { env, SELF } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { contentSecurityPolicy } from '../src/portal/serve';
import { expectEnvelope } from './helpers/replies';
import { fetchWith, ORIGIN } from './helpers/requests';

afterEach(() => {
  vi.restoreAllMocks();
});

const get = (path: string, init: RequestInit = {}) => SELF.fetch(ORIGIN + path, { redirect: 'manual', ...init });

/** The CSP's directives, by name. */
const directives = (policy: string | null) =>
  Object.fromEntries(
    (policy ?? '')
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0] !== '')
      .map(([name, ...values]) => [name, values.join(' ')]),
  );

function expectSecurityHeaders(res: Response) {
  const csp = directives(res.headers.get('content-security-policy'));
  expect(csp['default-src']).toBe("'self'");
  expect(csp['script-src']).toBe("'self'");
  expect(csp['style-src']).toBe("'self'");
  expect(csp['connect-src']).toBe("'self'");
  expect(csp['base-uri']).toBe("'none'");
  expect(csp['form-action']).toBe("'self'");
  expect(csp['object-src']).toBe("'none'");
  expect(csp['frame-ancestors']).toBe("'none'");
  expect(res.headers.get('content-security-policy')).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  expect(res.headers.get('x-request-id')).toBeTruthy();
}

/** The page's script and style, as index.html names them. */
async function assetPaths() {
  const html = await (await get('/portal/')).text();
  const script = /<script type="module" src="(\/portal\/app-[\w-]{10}\.js)"/.exec(html)?.[1];
  const style = /<link rel="stylesheet" href="(\/portal\/style-[\w-]{10}\.css)"/.exec(html)?.[1];
  expect(script).toBeTruthy();
  expect(style).toBeTruthy();
  return { script: script as string, style: style as string };
}

describe('the portal page', () => {
  it('serves /portal/ as HTML with the security headers, not stored by caches', async () => {
    const res = await get('/portal/', { headers: { 'x-request-id': 'portal-req-1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expectSecurityHeaders(res);
    expect(res.headers.get('x-request-id')).toBe('portal-req-1');
    const html = await res.text();
    // No inline script or style, nothing from another origin.
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son\w+=/i);
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
  });

  it('redirects /portal to /portal/ (the browser keeps the #token fragment), with the headers', async () => {
    const res = await get('/portal?x=1');
    expect(res.status).toBe(308);
    expect(res.headers.get('location')).toBe('/portal/?x=1');
    expectSecurityHeaders(res);
  });

  it.each([
    '/portal/endpoints/1',
    '/portal/endpoints/9223372036854775807/deliveries/42',
    '/portal/deliveries/9223372036854775807',
    '/portal/events/evt_0123456789abcdef0123456789abcdef',
    '/portal/event-types',
  ])('answers its own route %s with the page', async (path) => {
    const res = await get(path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('<div id="app">');
    expectSecurityHeaders(res);
  });

  it('serves the script and style with their types, the headers, and a year of caching (their names change with them)', async () => {
    const { script, style } = await assetPaths();
    for (const [path, type] of [
      [script, /^(?:text|application)\/javascript/],
      [style, /^text\/css/],
    ] as const) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(type);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expectSecurityHeaders(res);
      expect((await res.text()).length).toBeGreaterThan(100);
    }
  });

  it('answers HEAD like GET, without a body', async () => {
    const res = await get('/portal/', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expectSecurityHeaders(res);
    expect(await res.text()).toBe('');
  });

  it.each([
    '/portal/nope',
    '/portal/endpoints/0',
    '/portal/endpoints/abc',
    '/portal/endpoints/1/',
    '/portal/app.js',
    '/portal/deliveries/0',
    '/portal/events/evt_',
    '/portal/events/42',
  ])('answers the 404 envelope for %s, an unknown path under /portal/', async (path) => {
    const res = await get(path, { headers: { 'x-request-id': 'portal-404' } });
    // The portal's headers, as on every reply under /portal.
    expectSecurityHeaders(res);
    expect(res.headers.get('x-request-id')).toBe('portal-404');
    await expectEnvelope(res, 404, 404, 'not found');
  });

  it.each([
    ['POST', '/portal/'],
    ['PUT', '/portal/endpoints/1'],
    ['DELETE', '/portal'],
    ['PATCH', '/portal/nope'],
    ['OPTIONS', '/portal/'],
    ['PROPFIND', '/portal/'],
  ])('answers 405 with Allow: GET, HEAD and the portal headers to %s %s', async (method, path) => {
    const res = await get(path, { method });
    expectSecurityHeaders(res);
    await expectEnvelope(res, 405, 405, 'method not allowed');
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  });

  it('answers a failure of the assets with the 500 envelope and the portal headers', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const broken = {
      fetch: async () => {
        throw new Error('assets unavailable');
      },
    };
    const res = await fetchWith({ ASSETS: broken }, new Request(`${ORIGIN}/portal/`));
    expectSecurityHeaders(res);
    expect(res.status).toBe(500);
    expect(error).toHaveBeenCalled();
  });

  it('fails closed with a locked policy on every reply while PORTAL_FRAME_ANCESTORS is refused', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    for (const path of ['/portal/', '/portal/nope']) {
      const res = await fetchWith({ PORTAL_FRAME_ANCESTORS: "'unsafe-inline'" }, new Request(ORIGIN + path));
      expect(res.status).toBe(500);
      const csp = directives(res.headers.get('content-security-policy'));
      expect(csp['default-src']).toBe("'none'");
      expect(csp['frame-ancestors']).toBe("'none'");
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });

  it("names the application's claim (JWT_APP_CLAIM) in the page, for the page to show it", async () => {
    const claimOf = async (res: Response) => /<meta name="app-claim" content="([^"]*)"/.exec(await res.text())?.[1];
    expect(await claimOf(await get('/portal/'))).toBe('sub');
    const custom = await fetchWith({ JWT_APP_CLAIM: 'client_id' }, new Request(`${ORIGIN}/portal/endpoints/7`));
    expect(custom.status).toBe(200);
    expect(custom.headers.get('content-length')).toBeNull();
    expect(await claimOf(custom)).toBe('client_id');
    // Written as a quoted attribute's value, where only a quote could end it: it is escaped.
    const odd = await fetchWith({ JWT_APP_CLAIM: '"><script>x</script>' }, new Request(`${ORIGIN}/portal/`));
    expect(await odd.text()).toContain('<meta name="app-claim" content="&quot;><script>x</script>" />');
  });

  it('writes AUTO_DISABLE_AFTER_HOURS into the page, for a failing endpoint to say when it will be disabled', async () => {
    const hoursOf = async (res: Response) =>
      /<meta name="auto-disable-hours" content="([^"]*)"/.exec(await res.text())?.[1];
    // The test configuration leaves it empty: the service's default.
    expect(await hoursOf(await get('/portal/'))).toBe('120');
    const set = await fetchWith({ AUTO_DISABLE_AFTER_HOURS: '36' }, new Request(`${ORIGIN}/portal/endpoints/7`));
    expect(set.status).toBe(200);
    expect(await hoursOf(set)).toBe('36');
    // However short the setting, the service waits 12 hours of failures at least.
    const short = await fetchWith({ AUTO_DISABLE_AFTER_HOURS: '2' }, new Request(`${ORIGIN}/portal/`));
    expect(await hoursOf(short)).toBe('12');
  });

  it('leaves every other path to the API: / is still the 404 envelope', async () => {
    await expectEnvelope(await get('/'), 404, 404, 'not found');
    await expectEnvelope(await get('/portalx'), 404, 404, 'not found');
  });

  it('has the ASSETS binding and PORTAL_FRAME_ANCESTORS empty in the test configuration', () => {
    expect(env.ASSETS).toBeTruthy();
    expect(env.PORTAL_FRAME_ANCESTORS).toBe('');
  });
});

describe('PORTAL_FRAME_ANCESTORS', () => {
  const frameAncestors = (setting: string) => directives(contentSecurityPolicy(setting))['frame-ancestors'];

  it("is 'none' when empty, and otherwise the origins it names", () => {
    expect(frameAncestors('')).toBe("'none'");
    expect(frameAncestors('  ')).toBe("'none'");
    expect(frameAncestors('https://console.example.com')).toBe('https://console.example.com');
    expect(frameAncestors(" 'self'   https://*.example.com:8443 https: ")).toBe(
      "'self' https://*.example.com:8443 https:",
    );
  });

  it.each([
    "https://a.example; script-src 'unsafe-inline'",
    'https://a.example,https://b.example',
    "'unsafe-inline'",
    '"https://a.example"',
  ])('fails closed, naming the setting, for %s', (setting) => {
    expect(() => contentSecurityPolicy(setting)).toThrow(/PORTAL_FRAME_ANCESTORS|frame-ancestors/);
  });
});
