import type pg from 'pg';
import type { Em, Orm } from './orm.js';

/**
 * Raw SQL outside any unit of work, for the hot paths that track no entities (the key lookup,
 * feed pages, counts, marks). Same call shape as `em.execute`: `?` placeholders; rows, or
 * `{ affectedRows }` for `'run'`.
 */
export interface Sql {
  execute<T = Record<string, unknown>[]>(query: string, params?: readonly unknown[], method?: 'all' | 'run'): Promise<T>;
}

/** `?` placeholders as `$1, $2, …`, outside quoted literals and identifiers; cached per statement text. */
const positional = new Map<string, string>();
export function toPositional(query: string): string {
  let converted = positional.get(query);
  if (converted === undefined) {
    let n = 0;
    converted = query.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\?/g, (match) => (match === '?' ? `$${++n}` : match));
    // Statement texts come from code, so this stays small; the bound guards against a caller that builds texts from data.
    if (positional.size < 1000) positional.set(query, converted);
  }
  return converted;
}

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
export async function createSql(orm: Orm, kind: 'postgres' | 'embedded', options: { preparedStatements?: boolean } = {}): Promise<Sql> {
  if (kind === 'embedded') {
    const em = orm.em as Em;
    return {
      execute: <T>(query: string, params: readonly unknown[] = [], method: 'all' | 'run' = 'all') =>
        em.execute(query, params.map(wellFormed), method) as Promise<T>,
    };
  }
  const pool = (await orm.em.getConnection().getNativeClient()) as pg.Pool;
  const named = options.preparedStatements ?? false;
  return {
    async execute<T>(query: string, params: readonly unknown[] = [], method: 'all' | 'run' = 'all'): Promise<T> {
      const text = toPositional(query);
      const result = await pool.query({ text, values: params as unknown[], ...(named && { name: statementName(text) }) });
      return (method === 'run' ? { affectedRows: result.rowCount ?? 0 } : result.rows) as T;
    },
  };
}
