import { CompiledQuery } from 'kysely';
import type pg from 'pg';
import sql, { empty, join, raw, type Sql as Statement } from 'sql-template-tag';
import type { Em, Orm } from './orm.js';

/** Each `sql` fragment carries its own values, so fragments compose without lining up positional parameters. */
export { sql, empty, join, raw, type Statement };

/** Raw SQL outside any unit of work, for statements that track no entities. */
export interface Db {
  rows<T = Record<string, unknown>>(statement: Statement): Promise<T[]>;
  /** Affected row count. */
  run(statement: Statement): Promise<number>;
}

/** For statements that must join the caller's EntityManager or transaction, which `Db` cannot. 'run' answers `{ affectedRows }`. */
export const inUnitOfWork = async <T>(em: Em, statement: Statement, method: 'all' | 'run' = 'all'): Promise<T> =>
  (await em.execute(statement.sql, statement.values, method)) as T;

/** With the `u` flag only lone (ill-formed) surrogates match. */
const LONE_SURROGATE = /\p{Surrogate}/u;
const LONE_SURROGATES = /\p{Surrogate}/gu;

/**
 * Lone surrogates as node-postgres sends them (U+FFFD): PGlite's encoder turns some into invalid
 * UTF-8 that PostgreSQL refuses with an internal error.
 */
function wellFormed(value: unknown): unknown {
  return typeof value === 'string' && LONE_SURROGATE.test(value) ? value.replace(LONE_SURROGATES, '\ufffd') : value;
}

/**
 * Named prepared statements are parsed and planned once per connection. Texts come from code, so
 * names are few; the bound stops texts built from data growing every connection (past it: unnamed).
 */
const STATEMENT_NAMES_MAX = 500;
const statementNames = new Map<string, string>();
function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (name === undefined && statementNames.size < STATEMENT_NAMES_MAX) {
    name = `s${statementNames.size}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * PostgreSQL: straight to the ORM's `pg` pool, skipping its formatting (bench/README.md). Embedded:
 * through the ORM, which keeps its one PGlite session's transactions apart.
 */
export async function createSql(orm: Orm, kind: 'postgres' | 'embedded', options: { preparedStatements?: boolean } = {}): Promise<Db> {
  if (kind === 'embedded') {
    const em = orm.em as Em;
    // Values bound, not inlined.
    const client = em.getConnection().getClient();
    const send = (statement: Statement) => client.executeQuery(CompiledQuery.raw(statement.text, statement.values.map(wellFormed)));
    return {
      rows: async <T>(statement: Statement) => (await send(statement)).rows as T[],
      run: async (statement: Statement) => Number((await send(statement)).numAffectedRows ?? 0),
    };
  }
  return poolDb((await orm.em.getConnection().getNativeClient()) as pg.Pool, options.preparedStatements ?? false);
}

export function poolDb(pool: pg.Pool, named: boolean): Db {
  const send = (text: string, values: unknown[]) => pool.query({ text, values, ...(named && { name: statementName(text) }) });
  return {
    rows: async <T>(statement: Statement) => (await send(statement.text, statement.values)).rows as T[],
    run: async (statement: Statement) => (await send(statement.text, statement.values)).rowCount ?? 0,
  };
}
