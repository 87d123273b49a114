/**
 * PGlite's own bare initialization, for the start-up comparison: open (or create) the data dir
 * with the extension the service loads, answer one query, then serve `/readyz` so the harness
 * measures it exactly as it measures the service (spawn → first 200). Plain JavaScript run by
 * Node itself, as the built service is: no TypeScript loader in the baseline. Env: DATA_DIR, PORT.
 */
import { createServer } from 'node:http';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

const db = await PGlite.create({ dataDir: process.env.DATA_DIR, extensions: { pg_trgm } });
const server = createServer((_req, res) => {
  void db.query('select 1').then(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ready"}'));
});
server.listen(Number(process.env.PORT), '127.0.0.1');
const shutdown = () => server.close(() => void db.close().finally(() => process.exit(0)));
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
