// A webhook receiver that verifies every request with `standardwebhooks`, the Standard Webhooks
// specification's reference library, and prints what it received. Run it with `npm run receiver`.
//
//   WEBHOOK_SECRET=whsec_... npm run receiver     listens on http://127.0.0.1:8790
//   WEBHOOK_SECRET: the webhook's signing secret; several, space-separated, while rotating
//   options: --port <n>, --secret <whsec_...> (also a secret, but npm prints its command line,
//            secret included: prefer the environment), --status <code> (answer this status
//            instead of 204, to watch retries: 500, 410, ...), --delay <seconds> (answer only
//            after this long: a slow receiver, to watch attempts time out), --only <path> (apply
//            --status and --delay only to requests to this path; others get 204 at once)
//
// Each request is printed with which of its secrets verified each of its signatures: during a
// rotation a request carries two, and a receiver holding both secrets shows both verifying.
//
// In your own receiver: verify the raw body bytes before parsing them, answer 2xx quickly, and
// deduplicate on `webhook-id` (a delivery may arrive more than once).
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const USAGE = `Usage: WEBHOOK_SECRET=whsec_... npm run receiver [-- --port 8790] [--status 204] [--delay <seconds>] [--only <path>]
       npm run receiver -- --secret whsec_... [--secret whsec_...] [--port 8790] [--status 204] [--delay <seconds>] [--only <path>]
--status: answer this status instead of 204 (500: retries; 410: the webhook disables itself).
--delay: answer only after this many seconds (longer than DELIVERY_TIMEOUT_SECONDS: the attempt times out).
--only: answer --status and --delay only at this path (/nft-events/...); other paths get 204 at once.
WEBHOOK_SECRET may hold several secrets, space-separated (while rotating).
The secret is the webhook's: in POST's reply (value.secret), or GET /v1.0/app/nft/webhook/secret.`;
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const values = (name) => args.flatMap((a, i) => (a === name ? [args[i + 1]] : []));
const port = Number(values('--port')[0] ?? process.env.PORT ?? 8790);
const status = Number(values('--status')[0] ?? 204);
const delay = Number(values('--delay')[0] ?? 0);
const only = values('--only')[0];
const fromEnvironment = (process.env.WEBHOOK_SECRET ?? '').split(/\s+/).filter((s) => s !== '');
const fromArguments = values('--secret');
const secrets = [...fromEnvironment, ...fromArguments];
if (
  secrets.length === 0 ||
  secrets.some((s) => !/^whsec_[A-Za-z0-9+/]+=*$/.test(s ?? '')) ||
  !(delay >= 0 && delay <= 600) ||
  !Number.isInteger(status) ||
  (only !== undefined && !only?.startsWith('/'))
) {
  console.error(USAGE);
  process.exit(2);
}
// First, where the secrets came from (npm echoes the command line, so a --secret is on screen).
const numbered = (list, from) => list.map((_, i) => `secret#${from + i}`).join(', ');
if (fromEnvironment.length > 0) console.log(`Secrets from WEBHOOK_SECRET: ${numbered(fromEnvironment, 1)}.`);
if (fromArguments.length > 0) {
  console.log(
    `Secrets from the command line: ${numbered(fromArguments, fromEnvironment.length + 1)} (npm printed it above, secret included: prefer WEBHOOK_SECRET=... npm run receiver).`,
  );
}
const verifiers = secrets.map((s) => new Webhook(s));
const seen = new Set();

/** For each signature of the header: the number of the secret that verifies it alone, or null. */
function verifiedBy(body, headers) {
  return headers['webhook-signature']
    .split(' ')
    .filter((s) => s !== '')
    .map((signature) => {
      const one = { ...headers, 'webhook-signature': signature };
      const index = verifiers.findIndex((v) => {
        try {
          v.verify(body, one);
          return true;
        } catch {
          return false;
        }
      });
      return index === -1 ? null : index + 1;
    });
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = {
      'webhook-id': req.headers['webhook-id'] ?? '',
      'webhook-timestamp': req.headers['webhook-timestamp'] ?? '',
      'webhook-signature': req.headers['webhook-signature'] ?? '',
    };
    const by = verifiedBy(body, headers);
    if (by.every((n) => n === null)) {
      console.log(`REFUSED ${req.method} ${req.url}: signature does not verify (webhook-id ${headers['webhook-id']})`);
      res.writeHead(401).end();
      return;
    }
    const again = seen.has(headers['webhook-id']) ? ' (again: deduplicate on webhook-id)' : '';
    seen.add(headers['webhook-id']);
    console.log(
      `VERIFIED ${req.method} ${req.url} webhook-id=${headers['webhook-id']} signatures: ${by.map((n, i) => `#${i + 1} ${n === null ? 'no secret' : `secret#${n}`}`).join(', ')}${again}`,
    );
    console.log(`  ${body}`);
    if (only !== undefined && req.url !== only) res.writeHead(204).end();
    else setTimeout(() => res.writeHead(status).end(), delay * 1000);
  });
});
// Started in the background by `npm run receiver ... &`, it stops with the npm that started it
// (`kill $RECEIVER`): npm does not pass the signal on, and the receiver would keep the port. (The
// script `exec`s node, so that npm, not a shell in between, is its parent.)
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 250).unref();

server.listen(port, '127.0.0.1', () => {
  const after = delay > 0 ? ` after ${delay} s` : '';
  const where = only === undefined ? '' : ` at ${only}, 204 elsewhere`;
  console.log(`Receiver listening on http://127.0.0.1:${port} (answers ${status}${after}${where}); Ctrl-C to stop.`);
});
