import type { Context } from 'hono';
import type { HonoBase } from 'hono/hono-base';
import { ConfigError } from '../core/errors';
import { perIsolate } from '../core/settings';
import type { AppEnv } from '../http/app-env';
import { Code, envelope, requestId } from '../http/envelope';

// The application portal (docs/portal.md): its page and assets come from Workers static assets
// (wrangler.toml [assets], built from portal/ by scripts/build-portal.mjs); this Worker runs first
// for /portal and /portal/* and adds the security headers. Other methods answer 405; a path under
// /portal/ that is neither an asset nor one of the page's own routes answers the 404 envelope.

/** The page's own routes (portal/src/router.ts): each is answered with the page, index.html. */
const PAGE_ROUTES = /^\/portal\/(?:endpoints\/[1-9]\d{0,18}(?:\/deliveries\/[1-9]\d{0,18})?|event-types)$/;
/** Script and style are named by a hash of their content: they never change, and are cached for a year. */
const FINGERPRINTED = /^\/portal\/[a-z]+-[\w-]{10}\.(?:js|css)$/;

/** One source of `frame-ancestors`: 'self', a scheme (`https:`), or a host source (`https://*.example.com:8443`). */
const SOURCE =
  /^(?:'self'|[a-z][a-z\d+.-]*:|(?:[a-z][a-z\d+.-]*:\/\/)?(?:\*\.)?[a-z\d-]+(?:\.[a-z\d-]+)*(?::(?:\d{1,5}|\*))?)$/i;

/**
 * The Content-Security-Policy of every portal reply. Scripts, styles and connections: this origin
 * only (no inline script or style, no eval); no plugin, no <base>; forms post here; Trusted Types
 * enforced (no string ever reaches an HTML sink). `frame-ancestors` is PORTAL_FRAME_ANCESTORS
 * (space-separated sources), 'none' when it is empty; anything else in it fails closed.
 */
export function contentSecurityPolicy(setting: string | undefined): string {
  const value = (setting ?? '').trim();
  const sources = value === '' ? [] : value.split(/\s+/);
  const bad = sources.find((s) => !SOURCE.test(s));
  if (bad !== undefined) {
    throw new ConfigError('PORTAL_FRAME_ANCESTORS', `"${bad.slice(0, 64)}" is not a frame-ancestors source`);
  }
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    `frame-ancestors ${sources.length === 0 ? "'none'" : sources.join(' ')}`,
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join('; ');
}

/** The headers every portal reply carries (besides the asset's own). */
function securityHeaders(c: Context<AppEnv>): Record<string, string> {
  // Once per isolate, like every setting (a refused one is read again, and refused, each time).
  const policy = perIsolate(c.env, 'PORTAL_FRAME_ANCESTORS', () => contentSecurityPolicy(c.env.PORTAL_FRAME_ANCESTORS));
  return {
    'content-security-policy': policy,
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    // For browsers without CSP's frame-ancestors; it cannot name origins, so only when none may frame.
    ...(policy.includes("frame-ancestors 'none'") ? { 'x-frame-options': 'DENY' } : {}),
    'x-request-id': requestId(c),
  };
}

async function portal(c: Context<AppEnv>): Promise<Response> {
  const url = new URL(c.req.url);
  const headers = securityHeaders(c);
  if (url.pathname === '/portal') {
    // The fragment (#token=...) is kept by the browser across the redirect.
    return new Response(null, {
      status: 308,
      headers: { ...headers, location: `/portal/${url.search}`, 'cache-control': 'no-store' },
    });
  }
  const asset = PAGE_ROUTES.test(url.pathname) ? new URL('/portal/', url) : url;
  const res = await c.env.ASSETS.fetch(new Request(asset, c.req.raw));
  if (res.status === 404) {
    await res.body?.cancel();
    return envelope(404, Code.notFound, requestId(c), {
      headers: { 'content-security-policy': headers['content-security-policy'] as string },
    });
  }
  const reply = new Response(res.body, res);
  for (const [name, value] of Object.entries(headers)) reply.headers.set(name, value);
  reply.headers.set(
    'cache-control',
    FINGERPRINTED.test(url.pathname) && res.ok ? 'public, max-age=31536000, immutable' : 'no-store',
  );
  return reply;
}

/** Mounts the portal: GET (and so HEAD) of /portal and everything under it; 405 for other methods. */
export function mountPortal(app: HonoBase<AppEnv>) {
  const paths = ['/portal', '/portal/*'];
  for (const path of paths) app.get(path, portal);
  app.on(['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'CONNECT'], paths, (c) =>
    envelope(405, Code.methodNotAllowed, requestId(c), { headers: { allow: 'GET, HEAD' } }),
  );
}
