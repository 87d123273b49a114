import type { Sql } from '../infra/database/sql.js';
import type { TraceResult } from './providers/provider.js';

/** A live cached result; a statement of its own or a subquery of a trace's opening read (trace.data.ts). `?`: the cache key. */
export const CACHED_ROW = `select status, persons from skip_trace_results where cache_key = ? and expires_at > now()`;

/** A CACHED_ROW row (jsonb arrives as text from the embedded database). */
export interface CachedRow {
  status: TraceResult['status'] | null;
  persons: TraceResult['persons'] | string | null;
}

/** Durable results per cache key (standardized address + normalized actor), kept for the configured TTL. */
export const resultCache = {
  async read(sql: Sql, cacheKey: string): Promise<TraceResult | null> {
    const [row] = await sql.execute<CachedRow[]>(CACHED_ROW, [cacheKey]);
    return resultCache.fromRow(row);
  },

  /** The result of a CACHED_ROW row; null for none (or a row whose columns are null: no cached result joined). */
  fromRow(row: CachedRow | undefined): TraceResult | null {
    if (!row?.status || row.persons === null) return null;
    return { status: row.status, persons: typeof row.persons === 'string' ? JSON.parse(row.persons) : row.persons };
  },

  async write(sql: Sql, cacheKey: string, result: TraceResult, provider: string, ttlDays: number): Promise<void> {
    await sql.execute(
      `insert into skip_trace_results (cache_key, status, persons, provider, created_at, expires_at)
       values (?, ?, ?::jsonb, ?, now(), now() + make_interval(days => ?))
       on conflict (cache_key) do update set status = excluded.status, persons = excluded.persons,
         provider = excluded.provider, created_at = excluded.created_at, expires_at = excluded.expires_at`,
      [cacheKey, result.status, JSON.stringify(result.persons), provider, ttlDays],
      'run',
    );
  },
};
