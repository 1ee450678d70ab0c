// The scopes a token grants, read as identity providers write them: the `scope` claim (RFC 8693,
// RFC 9068: a space-separated string; some providers write an array) and the `scp` claim (Okta
// writes an array, Microsoft a space-separated string). Pure, so that the portal reads a token's
// scopes exactly as the service does.

/**
 * One scope: RFC 6749's scope-token (visible ASCII but `"` and `\`), less the comma. A comma is
 * not a separator of scopes (RFC 6749 separates them by spaces), and a scope named
 * "webhooks:read,webhooks:write" would match neither: such a token would keep every right.
 */
const SCOPE_TOKEN = /^[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]+$/;

/** The claims that carry scopes; a token with both grants the scopes of both. */
const SCOPE_CLAIMS = ['scope', 'scp'] as const;

/**
 * The scopes a token's claims grant: [] when it has no `scope` or `scp` claim. null when they
 * cannot be read, and the token must be refused: a claim that is neither a string nor an array of
 * strings, that names no scope (an empty string or array), or an entry that is not one scope
 * token (empty, a comma, a control character; in an array, a space).
 */
export function scopesOf(claims: Record<string, unknown>): string[] | null {
  const scopes: string[] = [];
  for (const name of SCOPE_CLAIMS) {
    const claim = claims[name];
    if (claim === undefined) continue;
    const entries: unknown[] | null =
      typeof claim === 'string' ? claim.split(' ').filter((s) => s !== '') : Array.isArray(claim) ? claim : null;
    if (entries === null || entries.length === 0) return null;
    for (const entry of entries) {
      if (typeof entry !== 'string' || !SCOPE_TOKEN.test(entry)) return null;
      scopes.push(entry);
    }
  }
  return scopes;
}

/** The scope an application token needs to read its webhooks, and the one it needs to change them. */
export const READ_SCOPE = 'webhooks:read';
export const WRITE_SCOPE = 'webhooks:write';

/**
 * Whether a token's scopes make it read-only: webhooks:read without webhooks:write. A token with
 * neither keeps every right (the tokens applications had before scopes).
 */
export const isReadOnly = (scopes: readonly string[]) => scopes.includes(READ_SCOPE) && !scopes.includes(WRITE_SCOPE);
