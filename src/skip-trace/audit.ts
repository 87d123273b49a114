import type { OrganizationPrincipal } from '../graphql/principal.js';
import type { Sql } from '../infra/database/sql.js';

/** One row of `skip_trace_requests`: what became of one skip trace request. */
export interface AuditEntry {
  /** The request's id: the `id` a 200 returned, the key of its ledger charge. */
  id: string;
  principal: OrganizationPrincipal;
  /** `performance.now()` when the request began. */
  startedAt: number;
  /** The trace status of a 200, else the error's REST name (`insufficient_credits`, …), `client_closed` or `replayed`. */
  outcome: string;
  cacheKey: string | null;
  cacheHit: boolean;
  charged: boolean;
}

/** The audit outcome of a call whose caller left before its response was delivered. */
export const CALLER_GONE = 'client_closed';

/** The audit outcome of a call answered with the stored answer of its Idempotency-Key's first request (uncharged). */
export const REPLAYED = 'replayed';

/**
 * The one writer of the skip trace audit (`skip_trace_requests`, raw SQL: one row per request,
 * on the hot path): every skip trace request that presented a valid skip trace key gets one row,
 * refused or not. `sql` is the charge's transaction when the row must commit with the charge.
 */
export async function recordAudit(sql: Sql, entry: AuditEntry): Promise<void> {
  await sql.execute(
    `insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms) values (?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      entry.id,
      entry.principal.organizationId,
      entry.principal.keyId,
      entry.cacheKey,
      entry.outcome,
      entry.cacheHit,
      entry.charged,
      Math.round(performance.now() - entry.startedAt),
    ],
    'run',
  );
}

/** The request's row once its charge was refunded (inside the refund's transaction). */
export async function recordRefund(sql: Sql, requestId: string, outcome: string): Promise<void> {
  await sql.execute(`update skip_trace_requests set charged = false, outcome = ? where id = ?`, [outcome, requestId], 'run');
}
