import type { EntityManager, MikroORM } from '@mikro-orm/sql';
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
  migrations: { migrationsList, snapshot: false, transactional: true, allOrNothing: true },
  // The service forks an EntityManager per request; the global one is never used for work.
  allowGlobalContext: false,
  debug: false,
  logger: (message: string) => log?.debug({ component: 'mikro-orm' }, message),
});

/** Arbitrary constant naming this service's migration lock (also held by `scripts/partition-notifications.ts`). */
export const MIGRATION_LOCK_ID = 724_513_901;

/**
 * Instances starting together must not run migrations at once (each would try to create the same
 * objects): a session-level advisory lock, on a connection of its own, serializes them.
 */
async function withMigrationLock<T>(url: string, migrate: () => Promise<T>): Promise<T> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    return await migrate();
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await client.end();
  }
}

/** The migrations this database has run, by name (none when it was never migrated): one query on the migrator's table. */
async function executedMigrations(orm: MikroORM): Promise<Set<string>> {
  const connection = orm.em.getConnection();
  const [table] = await connection.execute<{ present: boolean }[]>(`select to_regclass('mikro_orm_migrations') is not null as present`);
  if (!table?.present) return new Set();
  const rows = await connection.execute<{ name: string }[]>('select name from mikro_orm_migrations');
  return new Set(rows.map((row) => row.name.replace(/\.[jt]s$/u, '')));
}

/**
 * Runs the bundled migrations this database has not run yet (up to `upTo`), and says how many it
 * had run before and how many ran now. A database that lists every bundled migration (every start
 * but the first after an upgrade) costs one query: the migrator and its dependencies (umzug) are
 * loaded only when there is something to run, which is most of a reopened start's own work.
 */
async function migrate(
  orm: MikroORM,
  upTo: { to: string } | undefined,
  serialize: <T>(run: () => Promise<T>) => Promise<T>,
): Promise<{ before: number; applied: number }> {
  const executed = await executedMigrations(orm);
  if (!upTo && migrationsList.every((migration) => executed.has(migration.name))) return { before: executed.size, applied: 0 };
  const { Migrator } = await import('@mikro-orm/migrations');
  Migrator.register(orm);
  const applied = await serialize(() => orm.migrator.up(upTo));
  return { before: executed.size, applied: applied.length };
}

/**
 * The ORM, built without connecting. Its constructor (unlike `MikroORM.init`) loads no optional
 * extension: the migrator is registered by migrate() when it is needed.
 */
function createOrm<T extends MikroORM>(ORM: new (options: never) => T, options: object): T {
  return new ORM(options as never);
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
    const orm = createOrm(PostgresORM, { ...shared(log), clientUrl: config.url, pool: { min: 0, max: config.poolMax } });
    try {
      await migrate(orm, upTo, (run) => withMigrationLock(config.url, run));
    } catch (error) {
      await orm.close(true).catch(() => undefined);
      throw error;
    }
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
    const orm = createOrm(PgliteORM, { ...shared(log), dbName: 'embedded', driverOptions: { pglite: embedded.pglite } });
    const { before, applied } = await migrate(orm, upTo, (run) => run());
    return {
      orm: orm as unknown as Orm,
      sql: await createSql(orm as unknown as Orm, 'embedded'),
      kind: 'embedded',
      freshEmbedded: before === 0 && applied > 0,
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
