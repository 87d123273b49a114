import type { EntityManager, MikroORM } from '@mikro-orm/sql';
import type { Logger } from 'pino';
import type pg from 'pg';
import type { Config } from '../config.js';
import { entities } from './entities.js';
import { startEmbeddedEngine, type EmbeddedEngine } from './embedded-engine.js';
import { createSql, sql, type Db } from './sql.js';
import { migrationsList } from '../../../migrations/index.js';

export type Orm = MikroORM;
export type Em = EntityManager;

export interface Database {
  orm: Orm;
  /** Statements outside the ORM (see sql.ts). */
  sql: Db;
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
 * objects): a transaction-level advisory lock, held by an open transaction on a connection of its
 * own, serializes them. Transaction-level so it is also right behind a pooler in transaction mode,
 * which pins a server connection to a client only for a transaction (a session-level lock would
 * stay on whichever server connection took it, and its unlock could land on another).
 */
async function withMigrationLock<T>(url: string, migrate: () => Promise<T>): Promise<T> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('begin');
    await client.query(sql`select pg_advisory_xact_lock(${MIGRATION_LOCK_ID})`);
    return await migrate();
  } finally {
    await client.query('rollback').catch(() => undefined);
    await client.end();
  }
}

/** The migrations this database has run, by name (none when it was never migrated): one query on the migrator's table. */
async function executedMigrations(db: Db): Promise<Set<string>> {
  const [table] = await db.rows<{ present: boolean }>(sql`select to_regclass('mikro_orm_migrations') is not null as present`);
  if (!table?.present) return new Set();
  const rows = await db.rows<{ name: string }>(sql`select name from mikro_orm_migrations`);
  return new Set(rows.map((row) => row.name.replace(/\.[jt]s$/u, '')));
}

/**
 * Runs the bundled migrations not run yet (up to `upTo`). The migrator (and umzug) is loaded only
 * when there is one to run: loading it was most of a reopened start's own work.
 */
async function migrate(
  orm: MikroORM,
  db: Db,
  upTo: { to: string } | undefined,
  serialize: <T>(run: () => Promise<T>) => Promise<T>,
): Promise<{ before: number; applied: number }> {
  const executed = await executedMigrations(db);
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
 * Opens the configured database (PostgreSQL or embedded PGlite, each driver loaded only when used)
 * and runs pending migrations. `engine`: an embedded engine already starting. `migrateTo`: stop
 * after that migration (for tests of the next one).
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
    let db: Db;
    try {
      db = await createSql(orm as unknown as Orm, 'postgres', { preparedStatements: config.preparedStatements });
      await migrate(orm, db, upTo, (run) => withMigrationLock(config.url, run));
    } catch (error) {
      await orm.close(true).catch(() => undefined);
      throw error;
    }
    return {
      orm: orm as unknown as Orm,
      sql: db,
      kind: 'postgres',
      freshEmbedded: false,
      pool: (await orm.em.getConnection().getNativeClient()) as pg.Pool,
      close: () => orm.close(true),
    };
  }

  const opening = engine ?? startEmbeddedEngine(config);
  opening.catch(() => undefined); // awaited below; not an unhandled rejection while the driver loads
  try {
    const { MikroORM: PgliteORM } = await import('@mikro-orm/pglite');
    // Built while PGlite is still opening (its discovery is CPU only): the driver asks for the
    // engine at its first query.
    const pglite = async () => (await opening).pglite;
    const orm = createOrm(PgliteORM, { ...shared(log), dbName: 'embedded', driverOptions: { pglite } });
    const embedded = await opening;
    const db = await createSql(orm as unknown as Orm, 'embedded');
    const { before, applied } = await migrate(orm, db, upTo, (run) => run());
    return {
      orm: orm as unknown as Orm,
      sql: db,
      kind: 'embedded',
      freshEmbedded: embedded.fresh || (before === 0 && applied > 0),
      pool: null,
      close: async () => {
        await orm.close(true);
        await embedded.close();
      },
    };
  } catch (error) {
    // Gives the data dir up, so that a caller that goes on (a test) can open it again.
    await opening.then((started) => started.close()).catch(() => undefined);
    throw error;
  }
}
