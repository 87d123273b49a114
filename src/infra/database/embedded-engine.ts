import type { PGlite } from '@electric-sql/pglite';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { lockDataDir } from './data-dir-lock.js';
import { embeddedTemplate } from './embedded-template.js';

type EmbeddedConfig = Extract<Config['database'], { kind: 'embedded' }>;

export interface EmbeddedEngine {
  pglite: PGlite;
  fresh: boolean;
  close(): Promise<void>;
}

/** PGlite's WebAssembly memory never shrinks, so keep the cache small (docs/scaling.md). */
const EMBEDDED_SETTINGS = ['-c', 'shared_buffers=16MB'];

/**
 * date, timestamp and timestamptz as PostgreSQL's text, as MikroORM has the pg driver give them:
 * PGlite's own parser (`new Date(text)`) reads years below 100 as 19xx or 20xx.
 */
const asText = (text: string) => text;
const TEXT_TIMESTAMPS = { 1082: asText, 1114: asText, 1184: asText };

/** Apart from the ORM so start-up can begin it early. A new data dir is unpacked from the build's template. */
export async function startEmbeddedEngine(config: EmbeddedConfig): Promise<EmbeddedEngine> {
  return (await beginEmbeddedEngine(config)).engine;
}

/** Resolves once the dir is locked, so PGlite compiles in the background while the caller loads the service. */
export async function beginEmbeddedEngine(config: EmbeddedConfig): Promise<{ engine: Promise<EmbeddedEngine> }> {
  const modules = Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite/contrib/pg_trgm')]);
  modules.catch(() => undefined); // awaited below, unless the lock is refused first
  const inMemory = config.dataDir.startsWith('memory://');
  const lock = inMemory ? undefined : await lockDataDir(config.dataDir);
  let PGlite, pg_trgm;
  try {
    [{ PGlite }, { pg_trgm }] = await modules;
  } catch (error) {
    await lock?.release();
    throw error;
  }
  const fresh = inMemory || !existsSync(join(config.dataDir, 'PG_VERSION'));
  const template = fresh && !inMemory ? embeddedTemplate() : undefined;
  const opening = PGlite.create({
    dataDir: config.dataDir,
    ...(template && { loadDataDir: template }),
    extensions: { pg_trgm },
    parsers: TEXT_TIMESTAMPS,
    startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS],
  });
  const engine = opening.then(
    (pglite): EmbeddedEngine => ({
      pglite,
      fresh,
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
