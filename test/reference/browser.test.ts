/**
 * The API reference page and GraphiQL in a real browser (Debian's Chromium through
 * playwright-core), against the service over HTTP. Every request to another origin is refused
 * and recorded, as is every Content-Security-Policy violation and page error: each test fails on
 * any. Screenshots go to test/.output/ (gitignored).
 */
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRAPHIQL_KEY_NOTE } from '../../src/http/graphql/yoga.js';
import { isolatedPage, launchChromium, screenshot } from '../support/browser.js';
import { publish, startService, type Provisioned, type TestService } from '../support/harness.js';

const UI_TIMEOUT = 60_000;
/** A person's first look at a page: what shows within it is what they see. */
const FIRST_SIGHT_MS = 3_000;

let service: TestService;
let browser: Browser;
let origin: string;
let user: Provisioned;

beforeAll(async () => {
  service = await startService();
  origin = new URL(service.baseUrl).origin;
  user = await service.provision({ scopes: ['READ'] });
  await publish(service, user.userId, [{ title: 'Browser test notification', body: 'seen in GraphiQL', notificationType: 'task_overdue' }]);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

/**
 * Opens `path` in a fresh isolated context, runs the steps, screenshots the page whatever
 * happened, then checks that nothing was asked of another host and no policy was broken.
 */
async function inPage(path: string, screenshotName: string, steps: (page: Page) => Promise<void>) {
  const isolated = await isolatedPage(browser, origin);
  const { page } = isolated;
  try {
    await page.goto(`${service.baseUrl}${path}`, { timeout: UI_TIMEOUT });
    await steps(page);
  } finally {
    await screenshot(page, screenshotName);
  }
  expect(isolated.foreignRequests, 'requests to other hosts').toEqual([]);
  expect(isolated.problems, 'CSP violations and page errors').toEqual([]);
  await isolated.context.close();
}

/** Replaces what GraphiQL's headers tab holds with `headers`, as a person types it. */
async function typeHeaders(page: Page, headers: Record<string, string>) {
  await page.locator('button[data-name="headers"]').click({ timeout: UI_TIMEOUT });
  // The section holds the variables and the headers editors; the other one is hidden.
  const editor = page.locator('section.graphiql-editor-tool[aria-label="Headers"] .graphiql-editor:not(.hidden) .monaco-editor');
  await editor.click({ timeout: UI_TIMEOUT });
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  // insertText, not type(): the editor would close brackets and quotes as they are typed.
  await page.keyboard.insertText(JSON.stringify(headers));
}

describe('GET /docs in a browser', () => {
  it(
    'renders the API reference from /openapi.json with the skip trace route and listNotifications, loading nothing from another host',
    () =>
      inPage('/docs', 'docs', async (page) => {
        // The gateway's section opens first: its operations table names every operationId.
        await page.getByText('listNotifications').first().waitFor({ state: 'visible', timeout: UI_TIMEOUT });
        // The skip trace section renders when its group is opened in the sidebar.
        await page.getByText('Skip trace', { exact: true }).first().click({ timeout: UI_TIMEOUT });
        await page.getByText('/api/v1/skiptrace', { exact: true }).first().waitFor({ state: 'visible', timeout: UI_TIMEOUT });
        await page.getByText('Traces the owners of a street address').first().waitFor({ state: 'visible', timeout: UI_TIMEOUT });
      }),
    3 * UI_TIMEOUT,
  );
});

/** Within the viewport, top to bottom: what a person sees without scrolling. */
async function inFirstScreen(page: Page, locator: Locator): Promise<boolean> {
  const box = await locator.boundingBox();
  const height = page.viewportSize()!.height;
  return box !== null && box.height > 0 && box.y >= 0 && box.y + box.height <= height;
}

/** Visible elements in the first screen that look like a loading placeholder. */
const placeholdersInView = (page: Page) =>
  page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>('[class*="skeleton" i], [class*="loading" i], [class*="loader" i], [aria-busy="true"]')]
      .filter((element) => {
        const box = element.getBoundingClientRect();
        return element.checkVisibility() && box.height > 0 && box.bottom > 0 && box.top < window.innerHeight;
      })
      .map((element) => `${element.tagName.toLowerCase()}.${element.className}`),
  );

describe('GET /docs at first sight', () => {
  it(
    'shows the reference in the first screen, no loading placeholder left in view, and no control that needs another host',
    // How long the first screen takes is a figure for bench, not a test (docs/architecture.md, Tooling).
    { timeout: 3 * UI_TIMEOUT },
    () =>
      inPage('/docs', 'docs-first-screen', async (page) => {
        const heading = page.getByRole('heading', { name: 'CRM developer API', exact: true }).first();
        const firstOperation = page.getByText('Runs a gateway operation named by operationId').first();
        // A person's first screen: the title, and the gateway's call in the sidebar, without scrolling.
        const shown = async () => (await inFirstScreen(page, heading)) && (await inFirstScreen(page, firstOperation));
        await expect.poll(shown, { timeout: UI_TIMEOUT, interval: 250 }).toBe(true);
        await expect.poll(() => placeholdersInView(page), { timeout: UI_TIMEOUT, interval: 250 }).toEqual([]);
        expect(await inFirstScreen(page, heading)).toBe(true);
        // Scalar's hosted features (its AI agent, MCP, its web client) and links out are not offered.
        for (const name of [/ask ai/i, /mcp/i, /open api client/i])
          expect(await page.getByRole('button', { name }).or(page.getByRole('link', { name })).count(), String(name)).toBe(0);
        const linksOut = await page.evaluate(() =>
          [...document.querySelectorAll<HTMLAnchorElement>('a[href]')]
            .filter((a) => a.checkVisibility() && /^https?:/.test(a.href) && new URL(a.href).origin !== location.origin)
            .map((a) => `${a.innerText.trim()} -> ${a.href}`),
        );
        expect(linksOut).toEqual([]);
        // The code samples name this service's host.
        await page.getByText('Runs a gateway operation named by operationId').first().click();
        await expect
          .poll(() => page.locator('pre, code').filter({ hasText: 'curl' }).first().innerText(), { timeout: UI_TIMEOUT })
          .toContain(`${origin}/api/v1/call`);
      }),
  );
});

describe('GraphiQL in a browser', () => {
  it(
    'opens with no error on screen; once a key is typed into its headers tab, the documentation explorer shows the schema without a refresh',
    () =>
      inPage('/graphql', 'graphiql-first-sight', async (page) => {
        await page.getByText(GRAPHIQL_KEY_NOTE).first().waitFor({ state: 'visible', timeout: UI_TIMEOUT });
        await page.waitForTimeout(FIRST_SIGHT_MS);
        await screenshot(page, 'graphiql-opened');
        const shown = () => page.locator('body').innerText();
        expect(await shown()).not.toMatch(/UNAUTHENTICATED|Error fetching schema|credential is required|"errors"/);
        await typeHeaders(page, { Authorization: `Bearer ${user.key}` });
        await page.locator('button[aria-label="Show Documentation Explorer"]').click({ timeout: UI_TIMEOUT });
        const rootTypes = page.locator('.graphiql-doc-explorer-root-type');
        await expect
          .poll(() => rootTypes.allInnerTexts(), { timeout: 10_000, interval: 250 })
          .toEqual(expect.arrayContaining(['query', 'mutation']));
        expect(await shown()).not.toMatch(/Error fetching schema|UNAUTHENTICATED/);
      }),
    3 * UI_TIMEOUT,
  );

  it(
    'a wrong key, then the right one: the documentation explorer recovers by itself, without a refresh',
    () =>
      inPage('/graphql', 'graphiql-key-corrected', async (page) => {
        await page.getByText(GRAPHIQL_KEY_NOTE).first().waitFor({ state: 'visible', timeout: UI_TIMEOUT });
        await page.locator('button[aria-label="Show Documentation Explorer"]').click({ timeout: UI_TIMEOUT });
        await typeHeaders(page, { Authorization: `Bearer gk_${'x'.repeat(40)}` });
        await page.getByText('Error fetching schema').first().waitFor({ state: 'visible', timeout: UI_TIMEOUT });
        await typeHeaders(page, { Authorization: `Bearer ${user.key}` });
        await expect
          .poll(() => page.locator('.graphiql-doc-explorer-root-type').allInnerTexts(), { timeout: 10_000, interval: 250 })
          .toEqual(expect.arrayContaining(['query', 'mutation']));
      }),
    3 * UI_TIMEOUT,
  );

  it(
    'shows where the key goes, runs a query with a key typed into its headers tab and shows the result, loading nothing from another host',
    () =>
      inPage('/graphql', 'graphiql', async (page) => {
        await page.getByText(GRAPHIQL_KEY_NOTE).first().waitFor({ state: 'visible', timeout: UI_TIMEOUT });
        await typeHeaders(page, { Authorization: `Bearer ${user.key}` });
        await page.locator('.graphiql-execute-button').click({ timeout: UI_TIMEOUT });
        const result = page.locator('.graphiql-response .result-window');
        await expect
          .poll(async () => (await result.innerText()).replace(/\u00a0/g, ' '), { timeout: UI_TIMEOUT, interval: 250 })
          .toContain('Browser test notification');
        const shown = (await result.innerText()).replace(/\u00a0/g, ' ');
        expect(shown).toMatch(/"total": 1\b/);
      }),
    3 * UI_TIMEOUT,
  );
});
