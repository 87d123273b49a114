import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`); `.ci/run` installs it when missing. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Screenshots of the browser tests (gitignored). */
export const OUTPUT_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '.output');

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: install it (apt-get install -y chromium) or set CHROMIUM_PATH.`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    // Root in containers needs --no-sandbox; no host but the service's resolves, whatever asks.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
  });
}

/**
 * A fresh context in which every request to another origin is refused and recorded, and every
 * Content-Security-Policy violation and page error is recorded too: a test fails on any of them.
 */
export interface IsolatedPage {
  context: BrowserContext;
  page: Page;
  foreignRequests: string[];
  problems: string[];
}

export async function isolatedPage(browser: Browser, origin: string): Promise<IsolatedPage> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const foreignRequests: string[] = [];
  const problems: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    foreignRequests.push(url);
    return route.abort('blockedbyclient');
  });
  // Requests route() may not see (from workers) still show up here.
  context.on('request', (request) => {
    const url = request.url();
    if (!/^(data|blob|about):/.test(url) && new URL(url).origin !== origin && !foreignRequests.includes(url)) foreignRequests.push(url);
  });
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return { context, page, foreignRequests, problems };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(OUTPUT_DIR, { recursive: true });
  const path = join(OUTPUT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}
