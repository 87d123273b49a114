/**
 * The API reference page and GraphiQL in a real browser (Debian's Chromium through
 * playwright-core), against the service over HTTP. Every request to another origin is refused
 * and recorded, as is every Content-Security-Policy violation and page error: each test fails on
 * any. Screenshots go to test/.output/ (gitignored).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRAPHIQL_KEY_NOTE } from '../../src/server/graphql/yoga.js';
import { isolatedPage, launchChromium, screenshot } from '../support/browser.js';
import { publish, startService, type Provisioned, type TestService } from '../support/harness.js';

const UI_TIMEOUT = 60_000;

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

describe('GraphiQL in a browser', () => {
  it(
    'shows where the key goes, runs a query with a key typed into its headers tab and shows the result, loading nothing from another host',
    () =>
      inPage('/graphql', 'graphiql', async (page) => {
        await page.getByText(GRAPHIQL_KEY_NOTE).first().waitFor({ state: 'visible', timeout: UI_TIMEOUT });
        await page.locator('button[data-name="headers"]').click({ timeout: UI_TIMEOUT });
        // The section holds the variables and the headers editors; the other one is hidden.
        const headers = page.locator('section.graphiql-editor-tool[aria-label="Headers"] .graphiql-editor:not(.hidden) .monaco-editor');
        await headers.click({ timeout: UI_TIMEOUT });
        await page.keyboard.press('ControlOrMeta+A');
        await page.keyboard.press('Delete');
        // insertText, not type(): the editor would close brackets and quotes as they are typed.
        await page.keyboard.insertText(JSON.stringify({ Authorization: `Bearer ${user.key}` }));
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
