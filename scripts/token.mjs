// Prints an access token for local calls, signed with .dev.vars' JWT_SECRET.
// Usage: npm run token -- <app_id> [--ttl <seconds>] [--jti <id>] [--scope <scopes>]
// A platform service that publishes events needs `--scope events:publish`.
import { signToken } from './sign-token.mjs';

const USAGE = 'Usage: npm run token -- <app_id> [--ttl <seconds>] [--jti <id>] [--scope <scopes>]';
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  console.log(USAGE);
  console.log("Prints an HS256 access token for <app_id>, signed with .dev.vars' JWT_SECRET (or the environment's).");
  console.log('A platform service that publishes events needs --scope events:publish.');
  process.exit(0);
}
let bad = false;
const option = (name) => {
  const i = args.indexOf(name);
  if (i === -1) return undefined;
  const value = args.splice(i, 2)[1];
  if (value === undefined || value.startsWith('-')) bad = true;
  return value;
};
const ttl = Number(option('--ttl') ?? 3600);
const jti = option('--jti');
const scope = option('--scope');
const appId = args[0];

// Anything left that looks like an option (a misspelt one, or a value missing) is not an app_id.
if (bad || !appId || appId.startsWith('-') || args.length > 1 || !Number.isInteger(ttl) || ttl <= 0) {
  console.error(USAGE);
  process.exit(2);
}

console.log(await signToken(appId, { ttl, jti, scope }));
