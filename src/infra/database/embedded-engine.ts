import type { PGlite } from '@electric-sql/pglite';
import type { Config } from '../config.js';
import { lockDataDir } from './data-dir-lock.js';

type EmbeddedConfig = Extract<Config['database'], { kind: 'embedded' }>;

export interface EmbeddedEngine {
  pglite: PGlite;
  /** Closes the database, then gives up its data dir. */
  close(): Promise<void>;
}

/**
 * PostgreSQL's buffer cache lives in PGlite's WebAssembly memory, which never shrinks: the default
 * 128 MB grows that memory from 128 to about 190 MiB. 16 MB keeps it at PGlite's 128 MiB floor and
 * the process about 100 MiB smaller (README, Quick start); reads past it come from the files,
 * through the operating system's page cache.
 */
const EMBEDDED_SETTINGS = ['-c', 'shared_buffers=16MB'];

/**
 * Starts the embedded PostgreSQL (PGlite, with pg_trgm for the feed's search indexes) on the
 * data dir, or in memory for `memory://`. Kept apart from the ORM so that start-up can begin it
 * before the rest of the service is loaded (see beginEmbeddedEngine). Loaded on demand, so a
 * service on PostgreSQL never loads the engine at all.
 *
 * PGlite is single-process and has no lock of its own: a data dir is locked for this process
 * before PGlite reads or writes anything in it, and refused (DataDirInUseError) if another holds it.
 */
export async function startEmbeddedEngine(config: EmbeddedConfig): Promise<EmbeddedEngine> {
  return (await beginEmbeddedEngine(config)).engine;
}

/**
 * startEmbeddedEngine in two steps: resolves once the data dir is locked and PGlite has begun
 * opening it (its WebAssembly then compiles on V8's background threads and its files are read
 * while the caller goes on loading the rest of the service), with the engine still to come.
 * Rejects when the lock is refused or PGlite cannot be loaded.
 */
export async function beginEmbeddedEngine(config: EmbeddedConfig): Promise<{ engine: Promise<EmbeddedEngine> }> {
  const modules = Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite/contrib/pg_trgm')]);
  modules.catch(() => undefined); // awaited below, unless the lock is refused first
  const lock = config.dataDir.startsWith('memory://') ? undefined : await lockDataDir(config.dataDir);
  let PGlite, pg_trgm;
  try {
    [{ PGlite }, { pg_trgm }] = await modules;
  } catch (error) {
    await lock?.release();
    throw error;
  }
  const opening = PGlite.create({
    dataDir: config.dataDir,
    extensions: { pg_trgm },
    startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS],
  });
  const engine = opening.then(
    (pglite): EmbeddedEngine => ({
      pglite,
      async close() {
        try {
          await pglite.close();
        } finally {
          await lock?.release();
        }
      },
    }),
    async (error: unknown) => {
      await lock?.release();
      throw error;
    },
  );
  engine.catch(() => undefined); // the caller's to await (and report); not an unhandled rejection meanwhile
  return { engine };
}
