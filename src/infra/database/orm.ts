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
  sql: Db;
  kind: Config['database']['kind'];
  freshEmbedded: boolean;
  /** For the pool size metric; null when embedded. */
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

/** Also taken by `scripts/partition-notifications.ts`. */
export const MIGRATION_LOCK_ID = 724_513_901;

/**
 * Serializes instances starting together. Transaction-level, on a connection of its own, so it also
 * holds behind a transaction-mode pooler, where a session lock's unlock could land on another connection.
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

async function executedMigrations(db: Db): Promise<Set<string>> {
  const [table] = await db.rows<{ present: boolean }>(sql`select to_regclass('mikro_orm_migrations') is not null as present`);
  if (!table?.present) return new Set();
  const rows = await db.rows<{ name: string }>(sql`select name from mikro_orm_migrations`);
  return new Set(rows.map((row) => row.name.replace(/\.[jt]s$/u, '')));
}

/** The migrator (and umzug) is loaded only when there is a migration to run: it dominated a reopened start. */
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

/** The constructor, unlike `MikroORM.init`, loads no optional extension (the migrator is registered on demand). */
function createOrm<T extends MikroORM>(ORM: new (options: never) => T, options: object): T {
  return new ORM(options as never);
}

/** Runs pending migrations. `engine`: an embedded engine already starting; `migrateTo`: for tests of the next migration. */
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
    // Built while PGlite is still opening; the driver awaits the engine at its first query.
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
    // So a caller that goes on (a test) can open the data dir again.
    await opening.then((started) => started.close()).catch(() => undefined);
    throw error;
  }
}
