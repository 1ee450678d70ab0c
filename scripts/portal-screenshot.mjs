// Takes docs/portal-endpoint.png: the portal's endpoint page at 1,280 x 800 (the whole page), in
// the headless Chromium of the browser tests, against the local service (`npm start`) with a
// webhook at a receiver this script runs on 127.0.0.1:8790 (the local configuration allows it) and
// two delivered test events. Usage: node scripts/portal-screenshot.mjs [--base <url>] [--out <file>]
import { createServer } from 'node:http';
import chromium from '@sparticuz/chromium';
import { chromium as playwright } from 'playwright-core';
import { signToken } from './sign-token.mjs';

const option = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : process.argv[i + 1];
};
const base = option('--base', 'http://localhost:8787');
const out = option('--out', new URL('../docs/portal-endpoint.png', import.meta.url).pathname);
const app = `screenshot-${Date.now().toString(36)}`;
const token = await signToken(app, { ttl: 900 });

const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}'));
});
await new Promise((resolve) => receiver.listen(8790, '127.0.0.1', resolve));

const api = async (method, path, body) => {
  const res = await fetch(`${base}/v1.0/app/nft/${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text).value;
};

const { webhook_id: id } = await api('POST', 'webhook', {
  url: 'http://127.0.0.1:8790/nft-events',
  description: 'Mints and transfers for the shop',
});
await api('POST', 'webhook/test', { webhook_id: id });
await api('POST', 'webhook/test', { webhook_id: id, type: 'NEW_NFT' });
for (let i = 0; i < 50; i++) {
  const { deliveries } = await api('GET', `webhook/delivery?webhook_id=${id}`);
  if (deliveries.length === 2 && deliveries.every((d) => d.status === 'succeeded')) break;
  await new Promise((r) => setTimeout(r, 200));
}

const browser = await playwright.launch({
  executablePath: await chromium.executablePath(),
  args: chromium.args.filter((a) => !['--single-process', '--disable-web-security'].includes(a)),
  headless: true,
});
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
await page.goto(`${base}/portal/endpoints/${id}#token=${token}`);
await page.getByRole('table', { name: 'Deliveries' }).locator('tbody tr').nth(1).waitFor();
await page.waitForTimeout(500);
await page.screenshot({ path: out, fullPage: true });
await browser.close();
receiver.close();
console.log(`${out}: the endpoint page of ${app}'s webhook ${id}`);
