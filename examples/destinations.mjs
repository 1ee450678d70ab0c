// A local stand-in of the four destination APIs (docs/destinations.md): it answers each request as
// the real API answers a success, and prints what arrived. SQS and Pub/Sub messages are verified
// with `standardwebhooks` exactly as a consumer of the real queue or topic would. Run it with
// `npm run destinations`; the local configuration (wrangler.toml's DESTINATION_API_BASES) sends
// every type here instead of to AWS, Google and Cloudflare.
//
//   WEBHOOK_SECRET=whsec_... npm run destinations      listens on http://127.0.0.1:8791
//   WEBHOOK_SECRET: the signing secrets of the webhooks sending here, space-separated
//   options: --port <n>, --status <code> (answer this status instead: 503 or 429 to watch
//            retries, 403 to watch an auth failure count toward auto-disable)
//
// It speaks: SQS SendMessage and EventBridge PutEvents (POST / with X-Amz-Target; their SigV4
// Authorization is printed, not checked: the stand-in has no credentials), Cloudflare Queues'
// push (POST /client/v4/accounts/{account}/queues/{queue}/messages, a bearer required), Google's
// token endpoint (POST /token, a JWT bearer grant) and Pub/Sub's topics.publish
// (POST /v1/projects/{project}/topics/{topic}:publish).
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  console.log('Usage: WEBHOOK_SECRET=whsec_... npm run destinations [-- --port 8791] [--status 200]');
  process.exit(0);
}
const value = (name) => args[args.indexOf(name) + 1];
const port = Number(args.includes('--port') ? value('--port') : (process.env.PORT ?? 8791));
const status = Number(args.includes('--status') ? value('--status') : 200);
const secrets = (process.env.WEBHOOK_SECRET ?? '').split(/\s+/).filter((s) => s !== '');

/** Which secret verifies a message (its body and webhook-* attributes), or why none does. */
function verified(body, attributes) {
  if (secrets.length === 0) return 'not verified (set WEBHOOK_SECRET)';
  for (const secret of secrets) {
    try {
      new Webhook(secret).verify(body, attributes);
      return `verified with ${secret.slice(0, 10)}…`;
    } catch {
      // The next secret.
    }
  }
  return 'NOT VERIFIED by any secret given';
}

const json = (res, code, body) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** The reply when --status asks for a failure: each API's own error shape. */
function failure(res, kind) {
  const message = status === 403 ? 'access denied' : status === 404 ? 'not found' : 'throttled';
  if (kind === 'aws')
    return json(res, status, {
      __type: `com.amazonaws#${status === 403 ? 'AccessDeniedException' : 'ThrottlingException'}`,
      message,
    });
  if (kind === 'cloudflare')
    return json(res, status, { success: false, errors: [{ code: status, message }], messages: [] });
  return json(res, status, {
    error: { code: status, message, status: status === 403 ? 'PERMISSION_DENIED' : 'UNAVAILABLE' },
  });
}

createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  const target = req.headers['x-amz-target'];
  const path = new URL(req.url, 'http://stand-in').pathname;
  try {
    if (req.method === 'POST' && target === 'AmazonSQS.SendMessage') {
      if (status !== 200) return failure(res, 'aws');
      const body = JSON.parse(text);
      const attributes = Object.fromEntries(
        Object.entries(body.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]),
      );
      console.log(
        `SQS ${body.QueueUrl}${body.MessageGroupId ? ` group ${body.MessageGroupId}` : ''}: ${verified(body.MessageBody, attributes)}`,
      );
      if (req.headers.authorization) console.log(`  ${req.headers.authorization.split(',')[0]}`);
      console.log(`  ${body.MessageBody}`);
      const md5 = createHash('md5').update(body.MessageBody).digest('hex');
      return json(res, 200, { MD5OfMessageBody: md5, MessageId: randomUUID() });
    }
    if (req.method === 'POST' && target === 'AWSEvents.PutEvents') {
      if (status !== 200) return failure(res, 'aws');
      const { Entries } = JSON.parse(text);
      for (const e of Entries) console.log(`EventBridge ${e.EventBusName} ${e.Source} ${e.DetailType}: ${e.Detail}`);
      return json(res, 200, { Entries: Entries.map(() => ({ EventId: randomUUID() })), FailedEntryCount: 0 });
    }
    const queue = /^\/client\/v4\/accounts\/([0-9a-f]{32})\/queues\/([0-9a-f]{32})\/messages$/.exec(path);
    if (req.method === 'POST' && queue !== null) {
      if (!/^Bearer \S+$/.test(req.headers.authorization ?? '')) return failure(res, 'cloudflare');
      if (status !== 200) return failure(res, 'cloudflare');
      const body = JSON.parse(text);
      console.log(`Cloudflare Queue ${queue[2]} (${body.content_type}): ${JSON.stringify(body.body)}`);
      return json(res, 200, { success: true, errors: [], messages: [], result: null });
    }
    if (req.method === 'POST' && path === '/token') {
      const form = new URLSearchParams(text);
      const [, claims] = (form.get('assertion') ?? '').split('.');
      const { iss, scope } = JSON.parse(Buffer.from(claims ?? '', 'base64url').toString('utf8') || '{}');
      console.log(`Google token for ${iss} (${scope})`);
      return json(res, 200, { access_token: `stand-in.${randomUUID()}`, expires_in: 3599, token_type: 'Bearer' });
    }
    const topic = /^\/v1\/(projects\/[^/]+\/topics\/[^/:]+):publish$/.exec(path);
    if (req.method === 'POST' && topic !== null) {
      if (status !== 200) return failure(res, 'google');
      const { messages } = JSON.parse(text);
      for (const m of messages) {
        const data = Buffer.from(m.data, 'base64').toString('utf8');
        console.log(
          `Pub/Sub ${topic[1]}${m.orderingKey ? ` key ${m.orderingKey}` : ''}: ${verified(data, m.attributes)}`,
        );
        console.log(`  ${data}`);
      }
      return json(res, 200, { messageIds: messages.map((_, i) => String(Date.now() + i)) });
    }
    json(res, 404, { error: `no stand-in for ${req.method} ${path}` });
  } catch (err) {
    json(res, 400, { error: String(err) });
  }
}).listen(port, '127.0.0.1', () => {
  console.log(`Destination stand-ins listening on http://127.0.0.1:${port} (SQS, EventBridge, Queues, Pub/Sub)`);
});
