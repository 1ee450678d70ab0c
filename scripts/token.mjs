// Prints an access token for local calls, signed with .dev.vars' JWT_SECRET.
// Usage: npm run token -- <app_id> [--ttl <seconds>] [--jti <id>] [--scope <scopes>]
// A platform service that publishes events needs `--scope events:publish`.
import { signToken } from './sign-token.mjs';

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args.splice(i, 2)[1];
};
const ttl = Number(option('--ttl') ?? 3600);
const jti = option('--jti');
const scope = option('--scope');
const appId = args[0];

if (!appId || !Number.isInteger(ttl) || ttl <= 0) {
  console.error('Usage: npm run token -- <app_id> [--ttl <seconds>] [--jti <id>] [--scope <scopes>]');
  process.exit(2);
}

console.log(await signToken(appId, { ttl, jti, scope }));
