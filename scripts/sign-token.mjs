// Signs a local access token with .dev.vars' JWT_SECRET (or the environment's): for
// `npm run token` and `npm run portal`.
import { SignJWT } from 'jose';
import { readDevVars } from './dev-vars.mjs';

/** The token for `appId`, valid `ttl` seconds; `scope` and `jti` when given. Exits when no secret is set. */
export async function signToken(appId, { ttl = 3600, jti, scope } = {}) {
  const vars = { ...readDevVars(), ...process.env };
  if (!vars.JWT_SECRET) {
    console.error('No JWT_SECRET in .dev.vars (or the environment): run `npm start` once to create it.');
    process.exit(1);
  }
  const jwt = new SignJWT({ [vars.JWT_APP_CLAIM || 'sub']: appId, ...(scope ? { scope } : {}) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(`${ttl}s`);
  if (vars.JWT_ISSUER) jwt.setIssuer(vars.JWT_ISSUER);
  if (vars.JWT_AUDIENCE) jwt.setAudience(vars.JWT_AUDIENCE);
  if (jti) jwt.setJti(jti);
  return jwt.sign(new TextEncoder().encode(vars.JWT_SECRET));
}
