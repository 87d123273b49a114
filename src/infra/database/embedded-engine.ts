import { mkdirSync } from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import type { Config } from '../config.js';

type EmbeddedConfig = Extract<Config['database'], { kind: 'embedded' }>;

/**
 * Starts the embedded PostgreSQL (PGlite, with pg_trgm for the feed's search indexes) on the
 * data dir, or in memory for `memory://`. Kept apart from the ORM so that start-up can begin it
 * before the rest of the service is loaded: its WebAssembly compiles on V8's background threads
 * meanwhile. Loaded on demand, so a service on PostgreSQL never loads the engine at all.
 */
export async function startEmbeddedEngine(config: EmbeddedConfig): Promise<PGlite> {
  if (!config.dataDir.startsWith('memory://')) mkdirSync(config.dataDir, { recursive: true });
  const [{ PGlite }, { pg_trgm }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite/contrib/pg_trgm')]);
  return PGlite.create({ dataDir: config.dataDir, extensions: { pg_trgm } });
}
