import { startPgbouncer, type Pgbouncer } from './local-engines.js';

/**
 * With TEST_VIA_PGBOUNCER=1 (`npm run test:pooler`), the whole run reaches DATABASE_URL's server
 * through a PgBouncer in transaction mode started here, with named prepared statements off, as a
 * deployment behind such a pooler runs.
 */
export default async function setup(): Promise<(() => Promise<void>) | void> {
  if (process.env.TEST_VIA_PGBOUNCER !== '1') return;
  const direct = process.env.DATABASE_URL;
  if (!direct) throw new Error('TEST_VIA_PGBOUNCER=1 needs DATABASE_URL (the server PgBouncer stands in front of)');
  const pooler: Pgbouncer = await startPgbouncer(direct);
  process.env.DATABASE_URL = pooler.url;
  process.env.DATABASE_PREPARED_STATEMENTS = 'false';
  // Tests that must reach the server itself (e.g. to terminate its connections) read this.
  process.env.DATABASE_DIRECT_URL = direct;
  return () => pooler.stop();
}
