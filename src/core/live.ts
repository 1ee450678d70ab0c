// Live deliveries' WebSocket, as the service and the portal both read it: the subprotocols a page
// asks for, the watchers a webhook may have, and the close codes: one more refused, the webhook gone.

/** The subprotocol a page asks for (beside its token's), and the one the service answers. */
export const LIVE_PROTOCOL = 'nft-webhook.live';

/**
 * The prefix of the subprotocol that carries a bearer token, `bearer.<token>`: a browser cannot
 * set `Authorization` on a WebSocket, and a URL is no place for a token (logs, history, referrers).
 */
export const BEARER_PROTOCOL = 'bearer.';

/** Pages one webhook may have watching at once. */
export const MAX_WATCHERS = 20;

/** The close code (and reason) that refuses a page past MAX_WATCHERS: it refreshes on its own instead. */
export const TOO_MANY_WATCHERS = 4429;
export const TOO_MANY_REASON = 'too many open pages for this webhook';

/**
 * The close code (and reason) of every watcher of a webhook once it is deleted (its application
 * erased included): the page says so instead of opening another connection.
 */
export const WEBHOOK_GONE = 4404;
export const WEBHOOK_GONE_REASON = 'this webhook was deleted';
