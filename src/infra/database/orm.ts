import type { EntityManager, MikroORM } from '@mikro-orm/sql';
import { Migrator } from '@mikro-orm/migrations';
import type { Logger } from 'pino';
import type pg from 'pg';
import type { Config } from '../config.js';
import { entities } from './entities.js';
import { startEmbeddedEngine, type EmbeddedEngine } from './embedded-engine.js';
import { createSql, type Sql } from './sql.js';
import { migrationsList } from '../../../migrations/index.js';

export type Orm = MikroORM;
export type Em = EntityManager;

export interface Database {
  orm: Orm;
  /** Raw SQL for the hot paths (see sql.ts). */
  sql: Sql;
  kind: Config['database']['kind'];
  /** True for an embedded database created by this start (its data dir was empty). */
  freshEmbedded: boolean;
  /** The connection pool on PostgreSQL (for its size in the metrics); the embedded database has none. */
  pool: pg.Pool | null;
  close(): Promise<void>;
}

const shared = (log?: Logger) => ({
  entities,
  extensions: [Migrator],
  migrations: { migrationsList, snapshot: false, transactional: true, allOrNothing: true },
  // The service forks an EntityManager per request; the global one is never used for work.
  allowGlobalContext: false,
  debug: false,
  logger: (message: string) => log?.debug({ component: 'mikro-orm' }, message),
});

/** Arbitrary constant naming this service's migration lock. */
const MIGRATION_LOCK_ID = 724_513_901;

/**
 * Instances starting together must not run migrations at once (each would try to create the same
 * objects): a session-level advisory lock, on a connection of its own, serializes them.
 */
async function withMigrationLock(url: string, migrate: () => Promise<unknown>): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await migrate();
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await client.end();
  }
}

/**
 * Opens the configured database (PostgreSQL or embedded PGlite) and runs pending migrations.
 * Each kind's driver is loaded only when used. `engine` is an embedded engine already being
 * started (see startEmbeddedEngine); without it one is started here. `migrateTo` stops after that
 * migration, so a test of the next one can start from the schema and rows it meets.
 */
export async function openDatabase(
  config: Config['database'],
  log?: Logger,
  engine?: Promise<EmbeddedEngine>,
  options: { migrateTo?: string } = {},
): Promise<Database> {
  const upTo = options.migrateTo === undefined ? undefined : { to: options.migrateTo };
  if (config.kind === 'postgres') {
    const { MikroORM: PostgresORM } = await import('@mikro-orm/postgresql');
    const orm = await PostgresORM.init({
      ...shared(log),
      clientUrl: config.url,
      pool: { min: 0, max: config.poolMax },
    });
    await withMigrationLock(config.url, () => orm.migrator.up(upTo));
    return {
      orm: orm as unknown as Orm,
      sql: await createSql(orm as unknown as Orm, 'postgres', { preparedStatements: config.preparedStatements }),
      kind: 'postgres',
      freshEmbedded: false,
      pool: (await orm.em.getConnection().getNativeClient()) as pg.Pool,
      close: () => orm.close(true),
    };
  }

  const [{ MikroORM: PgliteORM }, embedded] = await Promise.all([import('@mikro-orm/pglite'), engine ?? startEmbeddedEngine(config)]);
  try {
    const orm = await PgliteORM.init({ ...shared(log), dbName: 'embedded', driverOptions: { pglite: embedded.pglite } });
    const executed = await orm.migrator.getExecuted();
    const applied = await orm.migrator.up(upTo);
    return {
      orm: orm as unknown as Orm,
      sql: await createSql(orm as unknown as Orm, 'embedded'),
      kind: 'embedded',
      freshEmbedded: executed.length === 0 && applied.length > 0,
      pool: null,
      close: async () => {
        await orm.close(true);
        await embedded.close();
      },
    };
  } catch (error) {
    // Gives the data dir up, so that a caller that goes on (a test) can open it again.
    await embedded.close().catch(() => undefined);
    throw error;
  }
}
