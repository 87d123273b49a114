import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * Tests that run the service as separate processes and inject faults into the shared PostgreSQL
 * and Redis (terminated connections, restarts). They run one file at a time, after the main
 * suite, and need DATABASE_URL and REDIS_URL.
 */
export default defineConfig({
  resolve: base.resolve,
  test: {
    include: ['test/processes/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // TEST_VIA_PGBOUNCER=1 (`npm run test:processes:pooler`): the spawned services reach PostgreSQL
    // through a PgBouncer in transaction mode, as a deployment behind such a pooler does.
    globalSetup: ['test/support/pooler-global-setup.ts'],
  },
});
