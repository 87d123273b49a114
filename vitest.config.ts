import { defineConfig } from 'vitest/config';

const BROWSER_TESTS = 'test/reference/browser.test.ts';

export default defineConfig({
  // graphql 16 ships CJS (`main`) and ESM (`module`) builds. Node loads the CJS one for our
  // dependencies, so Vite must resolve the same file or graphql sees two "realms".
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    // Separate processes and fault injection: `npm run test:processes` (vitest.processes.config.ts).
    exclude: ['test/processes/**', '**/node_modules/**'],
    // Each file starts its own service (and, in embedded mode, its own in-memory PGlite).
    pool: 'forks',
    // TEST_VIA_PGBOUNCER=1: the run goes through a PgBouncer in transaction mode (npm run test:pooler).
    globalSetup: ['test/support/pooler-global-setup.ts'],
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'service', include: ['test/**/*.test.ts'], exclude: [BROWSER_TESTS], sequence: { groupOrder: 0 } } },
      // The browser tests time what a person sees on first load; they run after the rest, with
      // the machine's CPUs to themselves, as a person's browser would have them.
      { extends: true, test: { name: 'browser', include: [BROWSER_TESTS], sequence: { groupOrder: 1 } } },
    ],
  },
});
