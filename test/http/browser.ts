// Headless Chromium for the portal's browser tests: the binary that the npm package
// @sparticuz/chromium ships (no browser download step), driven by playwright-core.
import chromium from '@sparticuz/chromium';
import { type Browser, chromium as playwright } from 'playwright-core';

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
