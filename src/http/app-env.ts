/** Hono's environment for this Worker: the bindings, and what the middleware sets per request. */
export type AppEnv = {
  Bindings: CloudflareBindings;
  Variables: {
    requestId: string;
    /** The verified calling application (from the token's app claim). */
    appId: string;
    /** The token's `jti`, when it has one: recorded as part of the audit actor. */
    jti: string | null;
    /** The scopes the token grants (its `scope` and `scp` claims; none when it has neither). */
    scopes: readonly string[];
    /** The webhook the request addresses, once its input is valid (for the log). */
    webhookId: string;
    /** The event a publish stored (for the log). */
    eventId: string;
    /** D1 calls made for the request, retries included (for the log). */
    d1Attempts: number;
    /** The request's D1 session bookmark once it used D1: sent back as X-D1-Bookmark. */
    bookmark: string | null;
  };
};
