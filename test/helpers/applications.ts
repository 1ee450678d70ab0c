// The platform's operations on an application: requests, its token, and its rows in D1.
import { env } from 'cloudflare:test';
import { fetchAndWait, ORIGIN } from './requests';
import { bearer, tokenFor } from './tokens';

export const APPLICATION_URL = `${ORIGIN}/v1.0/platform/nft/application`;

/** The headers of a platform service whose token has the platform:admin scope (or `scope`). */
export const adminHeaders = async (scope: string | undefined = 'platform:admin') =>
  bearer(await tokenFor('platform-admin', { scope }));

/** A request to the application path: `query` for GET and DELETE, a JSON `body` (or text) for PUT. */
export function applicationRequest(
  method: 'GET' | 'PUT' | 'DELETE',
  headers: Record<string, string>,
  { query, body }: { query?: string; body?: unknown } = {},
): Request {
  return new Request(query === undefined ? APPLICATION_URL : `${APPLICATION_URL}?${query}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Sends it through the Worker and waits for what it left running (the erasure after a DELETE's 202). */
export const callApplication = (
  method: 'GET' | 'PUT' | 'DELETE',
  headers: Record<string, string>,
  options: { query?: string; body?: unknown } = {},
  overrides: Record<string, unknown> = {},
) => fetchAndWait(overrides, applicationRequest(method, headers, options));

export const appQuery = (appId: string) => `app_id=${encodeURIComponent(appId)}`;

export interface ApplicationRow {
  app_id: string;
  retention_days: number | null;
  erasure_requested_at: string | null;
  erased_at: string | null;
  erased: string | null;
}

/** The application's row in D1, or null. */
export const applicationRow = (appId: string) =>
  env.DB.prepare(
    'SELECT app_id, retention_days, erasure_requested_at, erased_at, erased FROM applications WHERE app_id = ?1',
  )
    .bind(appId)
    .first<ApplicationRow>();

/** The application's audit records, oldest first. */
export async function applicationAudit(appId: string) {
  const { results } = await env.DB.prepare(
    `SELECT action, json(detail) AS detail, actor, request_id FROM application_audit WHERE app_id = ?1 ORDER BY audit_id`,
  )
    .bind(appId)
    .all<{ action: string; detail: string; actor: string; request_id: string }>();
  return results.map((r) => ({ ...r, detail: JSON.parse(r.detail) as Record<string, unknown> }));
}
