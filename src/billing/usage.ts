/**
 * An organization's usage: its skip trace requests as audited (`skip_trace_requests`, written by
 * audit.ts), newest first, so a customer can match each charge to the `id` it was answered with.
 */
import { badInput } from '../common/errors.js';
import { decodeKeysetCursor, encodeKeysetCursor } from '../common/keyset-cursor.js';
import { join, sql, type Db } from '../infra/database/sql.js';

export const USAGE_PAGE_SIZE = { default: 50, min: 1, max: 200 } as const;

export interface UsageRequest {
  id: string;
  createdAt: Date;
  outcome: string;
  charged: boolean;
  cacheHit: boolean;
}

export interface UsagePage {
  requests: UsageRequest[];
  /** Null on the last page. */
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

/** A cursor pages one organization's usage only. */
const usageList = (organizationId: string) => `skip-trace-usage:${organizationId}`;

/**
 * One page of the organization's requests in [from, to), newest first: a keyset walk of
 * `skip_trace_requests_usage_idx`. Requests recorded meanwhile sort before the cursor, so paging
 * returns each request that existed at the first call once.
 */
export async function listUsage(db: Db, organizationId: string, query: UsageQuery): Promise<UsagePage> {
  const limit = query.limit ?? USAGE_PAGE_SIZE.default;
  if (!Number.isInteger(limit) || limit < USAGE_PAGE_SIZE.min || limit > USAGE_PAGE_SIZE.max)
    throw badInput(`limit must be an integer from ${USAGE_PAGE_SIZE.min} to ${USAGE_PAGE_SIZE.max}.`, [
      { path: 'limit', message: `must be between ${USAGE_PAGE_SIZE.min} and ${USAGE_PAGE_SIZE.max}` },
    ]);
  if (query.from && query.to && query.from > query.to)
    throw badInput('to must not be before from.', [{ path: 'to', message: 'must not be before from' }]);
  const after = query.cursor ? decodeKeysetCursor(usageList(organizationId), query.cursor) : null;
  if (query.cursor && !after)
    throw badInput('cursor is malformed or belongs to another listing.', [{ path: 'cursor', message: 'is not a cursor of this listing' }]);

  // Only the conditions present are written: a generic plan of `(? is null or …)` could not use
  // the keyset bound to start the index scan.
  const conditions = [
    sql`organization_id = ${organizationId}`,
    ...(query.from ? [sql`created_at >= ${query.from}::timestamptz`] : []),
    ...(query.to ? [sql`created_at < ${query.to}::timestamptz`] : []),
    ...(after ? [sql`(created_at, id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)`] : []),
  ];
  const rows = await db.rows<{ id: string; created_at: Date | string; outcome: string; charged: boolean; cache_hit: boolean }>(
    sql`select id, created_at, outcome, charged, cache_hit from skip_trace_requests
      where ${join(conditions, ' and ')}
      order by created_at desc, id desc
      limit ${limit + 1}`,
  );
  const requests = rows.slice(0, limit).map((row) => ({
    id: row.id,
    createdAt: new Date(row.created_at),
    outcome: row.outcome,
    charged: row.charged,
    cacheHit: row.cache_hit,
  }));
  const last = requests[requests.length - 1];
  return { requests, nextCursor: rows.length > limit && last ? encodeKeysetCursor(usageList(organizationId), last) : null };
}
