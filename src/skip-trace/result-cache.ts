import { sql, type Db, type Statement } from '../infra/database/sql.js';
import type { TraceResult } from './providers/provider.js';

/** Also a subquery of the opening read, where `cacheKey` may be an outer column. */
export const cachedRow = (cacheKey: string | Statement) =>
  sql`select status, persons from skip_trace_results where cache_key = ${cacheKey} and expires_at > now()`;

/** jsonb arrives as text from the embedded database. */
export interface CachedRow {
  status: TraceResult['status'] | null;
  persons: TraceResult['persons'] | string | null;
}

export const resultCache = {
  async read(db: Db, cacheKey: string): Promise<TraceResult | null> {
    const [row] = await db.rows<CachedRow>(cachedRow(cacheKey));
    return resultCache.fromRow(row);
  },

  /** Null columns too: the opening read's left join found no cached result. */
  fromRow(row: CachedRow | undefined): TraceResult | null {
    if (!row?.status || row.persons === null) return null;
    return { status: row.status, persons: typeof row.persons === 'string' ? JSON.parse(row.persons) : row.persons };
  },

  async write(db: Db, cacheKey: string, result: TraceResult, provider: string, ttlDays: number): Promise<void> {
    await db.run(
      sql`insert into skip_trace_results (cache_key, status, persons, provider, created_at, expires_at)
       values (${cacheKey}, ${result.status}, ${JSON.stringify(result.persons)}::jsonb, ${provider}, now(), now() + make_interval(days => ${ttlDays}))
       on conflict (cache_key) do update set status = excluded.status, persons = excluded.persons,
         provider = excluded.provider, created_at = excluded.created_at, expires_at = excluded.expires_at`,
    );
  },
};
