// Headless Chromium for the portal's browser tests: the binary that the npm package
// @sparticuz/chromium ships (no browser download step), driven by playwright-core. And what every
// portal test file sets up with it: the file's browser, the pages its tests open, the API calls
// that make what a journey starts from, and the page's parts found as a screen reader finds them.
import chromium from '@sparticuz/chromium';
import { type Browser, type BrowserContext, type Page, chromium as playwright } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, inject } from 'vitest';
import { apiOf } from './api';

/**
 * @sparticuz/chromium's arguments, less three made for its serverless use that would change what
 * is tested: --single-process (closing a context ends the whole browser), --disable-web-security
 * (no same-origin policy) and --allow-running-insecure-content.
 */
const DROPPED = ['--single-process', '--disable-web-security', '--allow-running-insecure-content'];

export async function launchBrowser(): Promise<Browser> {
  return playwright.launch({
    executablePath: await chromium.executablePath(),
    args: chromium.args.filter((a) => !DROPPED.includes(a)),
    headless: true,
  });
}

/** The key under which the portal keeps its token in sessionStorage. */
export const TOKEN_KEY = 'nft-webhook-portal.token';

/**
 * Calls the shared `wrangler dev`'s API as `appId` (with `scope` when given), `body` sent as JSON:
 * the status, the envelope's value and the reply's text.
 */
export const api = <T = unknown>(appId: string, method: string, path: string, body?: unknown, scope?: string) =>
  apiOf(inject('baseUrl'), inject('secret')).json<T>(appId, method, path, body, scope);

/** A page a test opened, and what it recorded until the test ended. */
export interface Opened {
  context: BrowserContext;
  page: Page;
  /** Its uncaught errors. */
  errors: string[];
  /** Every request it made, with the Authorization header it carried. */
  requests: { url: string; authorization?: string }[];
  /** The URL of every WebSocket it opened. */
  sockets: string[];
}

/** A page's viewport (1280 by 800 unless said). */
export interface Size {
  width?: number;
  height?: number;
}

export interface PageOptions extends Size {
  /** Runs on the fresh context before its page is made (permissions, routes). */
  prepare?: (context: BrowserContext) => Promise<unknown>;
  /** Checks the page once the test has ended and its context is closed; by default, that it had no error. */
  check?: (opened: Opened) => void;
}

const noErrors = ({ errors }: Opened) => expect(errors).toEqual([]);

/**
 * The test file's browser, launched before its tests and closed after them, and the pages its tests
 * open: each in a fresh context (its own sessionStorage), 1280 by 800 unless said, waiting at most
 * 10 seconds for anything; after each test, its pages' contexts are closed and each page checked.
 */
export function portalBrowser() {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  const pages: { opened: Opened; check: (opened: Opened) => void }[] = [];
  afterEach(async () => {
    for (const { opened, check } of pages.splice(0)) {
      await opened.context.close();
      check(opened);
    }
  });

  async function newPage({ width = 1280, height = 800, prepare, check = noErrors }: PageOptions = {}) {
    if (browser === undefined) throw new Error('the browser is launched before the tests (beforeAll)');
    const context = await browser.newContext({ viewport: { width, height } });
    context.setDefaultTimeout(10_000);
    await prepare?.(context);
    const page = await context.newPage();
    const opened: Opened = { context, page, errors: [], requests: [], sockets: [] };
    page.on('pageerror', (e) => opened.errors.push(e.message));
    page.on('request', (r) => opened.requests.push({ url: r.url(), authorization: r.headers().authorization }));
    page.on('websocket', (ws) => opened.sockets.push(ws.url()));
    pages.push({ opened, check });
    return opened;
  }

  /** Opens `path` of the portal with `token`'s link; waits for the page's heading. */
  async function open(token: string, path = '/portal/', size: Size = {}) {
    const { page } = await newPage(size);
    await page.goto(`${inject('baseUrl')}${path}#token=${token}`);
    await page.getByRole('heading', { level: 1 }).waitFor();
    return page;
  }

  return { newPage, open };
}

export const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });
/** The body rows of the table named `table` (Endpoints, Deliveries, Attempts). */
export const rowsOf = (page: Page, table: string) => page.getByRole('table', { name: table }).locator('tbody tr');
/** The value of the facts' entry named `term` (State, Filter, Destination, ...). */
export const fact = (page: Page, term: string) => page.locator(`dl.facts dt:text-is("${term}") + dd`);
