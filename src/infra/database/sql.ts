import { CompiledQuery } from 'kysely';
import type pg from 'pg';
import sql, { empty, join, raw, type Sql as Statement } from 'sql-template-tag';
import type { Em, Orm } from './orm.js';

/**
 * Statements are written with the `sql` tag: each fragment carries its own values, so fragments
 * from several modules compose without lining up positional parameters by hand.
 */
export { sql, empty, join, raw, type Statement };

/**
 * Raw SQL outside any unit of work, for the statements that track no entities (the key lookup,
 * feed pages, counts, marks, the trace's statements).
 */
export interface Db {
  /** The statement's rows. */
  rows<T = Record<string, unknown>>(statement: Statement): Promise<T[]>;
  /** How many rows the statement changed. */
  run(statement: Statement): Promise<number>;
}

/**
 * Runs `statement` in the caller's unit of work (its EntityManager, or the transaction it runs
 * in), which the pool (`Db`) cannot join: admin writes, purchases, imports, the demo seed's
 * publishes. `method` 'run' answers `{ affectedRows }` instead of the rows.
 */
export const inUnitOfWork = async <T>(em: Em, statement: Statement, method: 'all' | 'run' = 'all'): Promise<T> =>
  (await em.execute(statement.sql, statement.values, method)) as T;

/** A lone surrogate (UTF-16 that is not well formed): in a string, with the `u` flag, only lone ones match. */
const LONE_SURROGATE = /\p{Surrogate}/u;
const LONE_SURROGATES = /\p{Surrogate}/gu;

/**
 * Strings with lone surrogates as node-postgres sends them (each one U+FFFD). PGlite's encoder
 * turns some of them into invalid UTF-8 (U+FEFF then U+DFFF, say), which PostgreSQL refuses with
 * an internal error; this makes the embedded engine answer such input as PostgreSQL does.
 */
function wellFormed(value: unknown): unknown {
  return typeof value === 'string' && LONE_SURROGATE.test(value) ? value.replace(LONE_SURROGATES, '\ufffd') : value;
}

/**
 * A name per statement text, for PostgreSQL's named prepared statements: each connection parses
 * and plans a named statement once, then only binds and executes it. Texts come from code (the
 * hot paths' fixed statements and their filter variants), so the names are few; the bound keeps
 * a caller that built texts from data from growing the map and every connection's statements
 * (past it, statements go unnamed, parsed each time as before).
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
 * On PostgreSQL: statements go straight to the ORM's own `pg` pool (one pool, one connection
 * budget), with the values bound as parameters, skipping the ORM's statement formatting and
 * query builder around each one, which were most of a count poll's allocations (bench/README.md).
 * With `preparedStatements` (the default; `DATABASE_PREPARED_STATEMENTS`), each statement is a
 * named prepared statement (see `statementName`); turn it off behind a pooler in transaction mode
 * (PgBouncer before 1.21), which cannot keep a session's prepared statements.
 * Embedded: through the ORM, which keeps its single PGlite session's transactions apart.
 */
export async function createSql(orm: Orm, kind: 'postgres' | 'embedded', options: { preparedStatements?: boolean } = {}): Promise<Db> {
  if (kind === 'embedded') {
    const em = orm.em as Em;
    // The ORM's query client (one PGlite session behind a lock that keeps transactions apart), with the values bound, not inlined.
    const client = em.getConnection().getClient();
    const send = (statement: Statement) => client.executeQuery(CompiledQuery.raw(statement.text, statement.values.map(wellFormed)));
    return {
      rows: async <T>(statement: Statement) => (await send(statement)).rows as T[],
      run: async (statement: Statement) => Number((await send(statement)).numAffectedRows ?? 0),
    };
  }
  return poolDb((await orm.em.getConnection().getNativeClient()) as pg.Pool, options.preparedStatements ?? false);
}

/** Statements on a `pg` pool, values bound; `named`: as named prepared statements (see `statementName`). */
export function poolDb(pool: pg.Pool, named: boolean): Db {
  const send = (text: string, values: unknown[]) => pool.query({ text, values, ...(named && { name: statementName(text) }) });
  return {
    rows: async <T>(statement: Statement) => (await send(statement.text, statement.values)).rows as T[],
    run: async (statement: Statement) => (await send(statement.text, statement.values)).rowCount ?? 0,
  };
}
