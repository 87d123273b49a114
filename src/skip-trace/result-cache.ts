import type { Sql } from '../infra/database/sql.js';
import type { TraceResult } from './providers/provider.js';

/** Durable results per cache key (standardized address + normalized actor), kept for the configured TTL. */
export const resultCache = {
  async read(sql: Sql, cacheKey: string): Promise<TraceResult | null> {
    const rows = await sql.execute<{ status: TraceResult['status']; persons: TraceResult['persons'] | string }[]>(
      `select status, persons from skip_trace_results where cache_key = ? and expires_at > now()`,
      [cacheKey],
    );
    const row = rows[0];
    if (!row) return null;
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
