// Prints a link that opens the application portal of the local service for one application, with
// a short-lived token signed with .dev.vars' JWT_SECRET (docs/portal.md: what a platform's link is).
// Usage: npm run portal -- <app_id> [--read-only] [--ttl <seconds>] [--base <url>]
// --read-only: the token's scope is webhooks:read (the portal shows no control that changes
// anything). Default lifetime 30 minutes; base http://localhost:8787.
import { signToken } from './sign-token.mjs';

const USAGE = `Usage: npm run portal -- <app_id> [--read-only] [--ttl <seconds>] [--base <url>]
Prints a link that opens the portal of the local service for <app_id> (npm run -s portal: the link alone).
  --read-only       the link can look but not change (scope webhooks:read)
  --ttl <seconds>   how long the link's token is valid (default 1800)
  --base <url>      the service (default http://localhost:8787)`;
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const option = (name) => {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args.splice(i, 2)[1];
};
const flag = (name) => {
  const i = args.indexOf(name);
  if (i !== -1) args.splice(i, 1);
  return i !== -1;
};
const ttl = Number(option('--ttl') ?? 1800);
const base = option('--base') ?? 'http://localhost:8787';
const readOnly = flag('--read-only');
const appId = args[0];

if (!appId || appId.startsWith('-') || args.length > 1 || !Number.isInteger(ttl) || ttl <= 0) {
  console.error(USAGE);
  process.exit(2);
}

const token = await signToken(appId, { ttl, scope: readOnly ? 'webhooks:read' : undefined });
console.log(`${new URL('/portal/', base).href}#token=${token}`);
