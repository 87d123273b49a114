/** So a customer can match each charge to the `id` it was answered with. */
import { badInput } from '../common/errors.js';
import { toDate } from '../common/to-date.js';
import { keysetPage, pageCursor, pageSize, type KeysetListing } from '../common/keyset-page.js';
import { join, sql, type Db } from '../infra/database/sql.js';

export const USAGE_PAGE_SIZE = { default: 50, min: 1, max: 200 } as const;
const USAGE_LISTING: KeysetListing = { size: { name: 'limit', ...USAGE_PAGE_SIZE }, cursor: { name: 'cursor', of: 'listing' } };

export interface UsageRequest {
  id: string;
  createdAt: Date;
  outcome: string;
  charged: boolean;
  cacheHit: boolean;
  batchId: string | null;
  jobId: string | null;
  key: string | null;
}

export interface UsagePage {
  requests: UsageRequest[];
  nextCursor: string | null;
}

export interface UsageQuery {
  /** Inclusive. */
  from?: Date | null;
  /** Exclusive. */
  to?: Date | null;
  cursor?: string | null;
  limit?: number | null;
}

interface UsageRow {
  id: string;
  created_at: Date | string;
  outcome: string;
  charged: boolean;
  cache_hit: boolean;
  batch_id: string | null;
  job_id: string | null;
  key: string | null;
}

/** A cursor pages one organization's usage only. */
const usageList = (organizationId: string) => `skip-trace-usage:${organizationId}`;

/** Keyset paging: requests recorded meanwhile sort before the cursor, so each request that existed at the first call comes once. */
export async function listUsage(db: Db, organizationId: string, query: UsageQuery): Promise<UsagePage> {
  const limit = pageSize(USAGE_LISTING, query.limit);
  if (query.from && query.to && query.from > query.to)
    throw badInput('to must not be before from.', [{ path: 'to', message: 'must not be before from' }]);
  const after = pageCursor(USAGE_LISTING, usageList(organizationId), query.cursor);

  // Only the conditions present are written: a generic plan of `(? is null or …)` could not use
  // the keyset bound to start the index scan.
  const conditions = [
    sql`organization_id = ${organizationId}`,
    ...(query.from ? [sql`created_at >= ${query.from}::timestamptz`] : []),
    ...(query.to ? [sql`created_at < ${query.to}::timestamptz`] : []),
    ...(after ? [sql`(created_at, id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)`] : []),
  ];
  const rows = await db.rows<UsageRow>(
    sql`select id, created_at, outcome, charged, cache_hit, batch_id, job_id, key from skip_trace_requests
      where ${join(conditions, ' and ')}
      order by created_at desc, id desc
      limit ${limit + 1}`,
  );
  const requests = rows.map((row) => ({
    id: row.id,
    createdAt: toDate(row.created_at),
    outcome: row.outcome,
    charged: row.charged,
    cacheHit: row.cache_hit,
    batchId: row.batch_id,
    jobId: row.job_id,
    key: row.key,
  }));
  const page = keysetPage(usageList(organizationId), requests, limit, (request) => request);
  return { requests: page.nodes, nextCursor: page.nextCursor };
}
