/** Hono's environment for this Worker: the bindings, and what the middleware sets per request. */
export type AppEnv = {
  Bindings: CloudflareBindings;
  Variables: {
    requestId: string;
    /** The verified calling application (from the token's app claim). */
    appId: string;
    /** The token's `jti`, when it has one: recorded as part of the audit actor. */
    jti: string | null;
  };
};
