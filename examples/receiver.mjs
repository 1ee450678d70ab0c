// A webhook receiver that verifies every request with `standardwebhooks`, the Standard Webhooks
// specification's reference library, and prints what it received. Run it with `npm run receiver`.
//
//   npm run receiver -- --secret whsec_...        listens on http://127.0.0.1:8790
//   options: --port <n>, --secret <whsec_...> (again for a second secret, e.g. while rotating),
//            --status <code> (answer this status instead of 204, to watch retries: 500, 410, ...)
//
// In your own receiver: verify the raw body bytes before parsing them, answer 2xx quickly, and
// deduplicate on `webhook-id` (a delivery may arrive more than once).
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const args = process.argv.slice(2);
const values = (name) => args.flatMap((a, i) => (a === name ? [args[i + 1]] : []));
const port = Number(values('--port')[0] ?? process.env.PORT ?? 8790);
const status = Number(values('--status')[0] ?? 204);
const secrets = [...values('--secret'), ...(process.env.WEBHOOK_SECRET ? [process.env.WEBHOOK_SECRET] : [])];
if (secrets.length === 0 || secrets.some((s) => !/^whsec_[A-Za-z0-9+/]+=*$/.test(s ?? ''))) {
  console.error('Usage: npm run receiver -- --secret whsec_... [--secret whsec_...] [--port 8790] [--status 204]');
  console.error("The secret is the webhook's: in POST's reply (value.secret), or GET /v1.0/app/nft/webhook/secret.");
  process.exit(2);
}
const verifiers = secrets.map((s) => new Webhook(s));
const seen = new Set();

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
    const verified = verifiers.findIndex((v) => {
      try {
        v.verify(body, headers);
        return true;
      } catch {
        return false;
      }
    });
    if (verified === -1) {
      console.log(`REFUSED ${req.method} ${req.url}: signature does not verify (webhook-id ${headers['webhook-id']})`);
      res.writeHead(401).end();
      return;
    }
    const again = seen.has(headers['webhook-id']) ? ' (again: deduplicate on webhook-id)' : '';
    seen.add(headers['webhook-id']);
    console.log(
      `VERIFIED ${req.method} ${req.url} webhook-id=${headers['webhook-id']} signatures=${headers['webhook-signature'].split(' ').length} secret#${verified + 1}${again}`,
    );
    console.log(`  ${body}`);
    res.writeHead(status).end();
  });
});
server.listen(port, '127.0.0.1', () => {
  console.log(`Receiver listening on http://127.0.0.1:${port} (answers ${status}); Ctrl-C to stop.`);
});
