import type { Context, MiddlewareHandler } from 'hono';
import type { HonoBase } from 'hono/hono-base';
import { appClaim } from '../auth/config';
import { deliveryConfig } from '../core/delivery-settings';
import { ConfigError } from '../core/errors';
import { perIsolate } from '../core/settings';
import { failingHours } from '../deliveries/record';
import type { AppEnv } from '../http/app-env';
import { Code, envelope, requestId } from '../http/envelope';

// The application portal (docs/portal.md): its page and assets come from Workers static assets
// (wrangler.toml [assets], built from portal/ by scripts/build-portal.mjs); this Worker runs first
// for /portal and /portal/* and adds the security headers. Other methods answer 405; a path under
// /portal/ that is neither an asset nor one of the page's own routes answers the 404 envelope.

/** The page's own routes (portal/src/router.ts): each is answered with the page, index.html. */
const PAGE_ROUTES =
  /^\/portal\/(?:endpoints\/[1-9]\d{0,18}(?:\/deliveries\/[1-9]\d{0,18})?|deliveries\/[1-9]\d{0,18}|events\/evt_[A-Za-z0-9]{1,64}|event-types)$/;
/** Script and style are named by a hash of their content: they never change, and are cached for a year. */
const FINGERPRINTED = /^\/portal\/[a-z]+-[\w-]{10}\.(?:js|css)$/;

/** One source of `frame-ancestors`: 'self', a scheme (`https:`), or a host source (`https://*.example.com:8443`). */
const SOURCE =
  /^(?:'self'|[a-z][a-z\d+.-]*:|(?:[a-z][a-z\d+.-]*:\/\/)?(?:\*\.)?[a-z\d-]+(?:\.[a-z\d-]+)*(?::(?:\d{1,5}|\*))?)$/i;

/**
 * The Content-Security-Policy of every portal reply. Scripts, styles and connections: this origin
 * only (no inline script or style, no eval; `connect-src 'self'` admits the live deliveries'
 * WebSocket, ws: or wss: to this host, as CSP Level 3 reads it); no plugin, no <base>; forms post here; Trusted Types
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

/**
 * The portal's policy, once per isolate like every setting (a refused PORTAL_FRAME_ANCESTORS is
 * read again, and refused, each time: a ConfigError).
 */
const portalPolicy = (env: CloudflareBindings) =>
  perIsolate(env, 'PORTAL_FRAME_ANCESTORS', () => contentSecurityPolicy(env.PORTAL_FRAME_ANCESTORS));

/** The headers every portal reply carries (besides the asset's own). */
function securityHeaders(c: Context<AppEnv>): Record<string, string> {
  let policy: string;
  try {
    policy = portalPolicy(c.env);
  } catch {
    // PORTAL_FRAME_ANCESTORS is refused (the reply is the 500 that says so): nothing may load or frame it.
    policy = LOCKED_POLICY;
  }
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

/** The policy of a reply made while PORTAL_FRAME_ANCESTORS is refused. */
const LOCKED_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * Every reply under /portal gets the security headers, whichever made it: the page and its assets,
 * the redirect, the 404 and 405 envelopes, a failure's 500.
 */
const withSecurityHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  for (const [name, value] of Object.entries(securityHeaders(c))) c.res.headers.set(name, value);
};

/**
 * The page with what it shows from the service's settings: the name of the claim that names the
 * application (JWT_APP_CLAIM, `<meta name="app-claim">`), so the page shows that claim of its token
 * as the service reads it; and the hours of failures after which the service disables a webhook
 * (AUTO_DISABLE_AFTER_HOURS, at least 12: `<meta name="auto-disable-hours">`), so a failing
 * endpoint's page says when it will be disabled (no reply of the API carries it). A
 * refused delivery setting leaves the template's default: no delivery is sent until it is fixed.
 */
function withSettings(page: Response, env: CloudflareBindings) {
  let hours: number | null = null;
  try {
    hours = failingHours(deliveryConfig(env));
  } catch {
    // A ConfigError: deliveries fail closed, and the logs of the paths that make them name it.
  }
  return new HTMLRewriter()
    .on('meta[name="app-claim"]', {
      element(meta) {
        meta.setAttribute('content', appClaim(env));
      },
    })
    .on('meta[name="auto-disable-hours"]', {
      element(meta) {
        if (hours !== null) meta.setAttribute('content', String(hours));
      },
    })
    .transform(page);
}

async function portal(c: Context<AppEnv>): Promise<Response> {
  const url = new URL(c.req.url);
  if (url.pathname === '/portal') {
    // The fragment (#token=...) is kept by the browser across the redirect.
    return new Response(null, {
      status: 308,
      headers: { location: `/portal/${url.search}`, 'cache-control': 'no-store' },
    });
  }
  // A refused PORTAL_FRAME_ANCESTORS fails closed: no page is served under it.
  portalPolicy(c.env);
  const asset = PAGE_ROUTES.test(url.pathname) ? new URL('/portal/', url) : url;
  const res = await c.env.ASSETS.fetch(new Request(asset, c.req.raw));
  if (res.status === 404) {
    await res.body?.cancel();
    return envelope(404, Code.notFound, requestId(c));
  }
  // The asset's headers are immutable: a copy takes the security headers.
  const page = res.headers.get('content-type')?.startsWith('text/html') === true;
  const reply = new Response(page ? withSettings(res, c.env).body : res.body, res);
  // The page's length changes with the settings written into it.
  if (page) reply.headers.delete('content-length');
  reply.headers.set(
    'cache-control',
    FINGERPRINTED.test(url.pathname) && res.ok ? 'public, max-age=31536000, immutable' : 'no-store',
  );
  return reply;
}

/**
 * Mounts the portal: GET (and so HEAD) of /portal and everything under it; 405 for every other
 * method; the security headers on every reply.
 */
export function mountPortal(app: HonoBase<AppEnv>) {
  const paths = ['/portal', '/portal/*'];
  for (const path of paths) app.use(path, withSecurityHeaders);
  for (const path of paths) app.get(path, portal);
  for (const path of paths)
    app.all(path, (c) => envelope(405, Code.methodNotAllowed, requestId(c), { headers: { allow: 'GET, HEAD' } }));
}
