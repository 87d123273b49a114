import { defineConfig } from 'vitest/config';

export default defineConfig({
  // graphql 16 ships CJS (`main`) and ESM (`module`) builds. Node loads the CJS one for our
  // dependencies, so Vite must resolve the same file or graphql sees two "realms".
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    include: ['test/**/*.test.ts'],
    // Separate processes and fault injection: `npm run test:processes` (vitest.processes.config.ts).
    exclude: ['test/processes/**', '**/node_modules/**'],
    // Each file starts its own service (and, in embedded mode, its own in-memory PGlite).
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
