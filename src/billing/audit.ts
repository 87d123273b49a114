import type { OrganizationPrincipal } from '../schema/principal.js';
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

const durationOf = (entry: AuditEntry) => Math.round(performance.now() - entry.startedAt);

/**
 * The one writer of the skip trace audit (`skip_trace_requests`, raw SQL: one row per request,
 * on the hot path): every skip trace request of a valid skip trace key that its rate window
 * admitted gets one row, refused afterwards or not; one the window refused writes nothing. A
 * charged trace's row is written by the charge's statement (AUDIT_OF_CHARGE).
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
      durationOf(entry),
    ],
    'run',
  );
}

/**
 * The row of a charged trace, as a CTE of the charge's one statement (trace.data.ts): written
 * only when `charged` (billing/skip-trace-account.ts) holds a row, so it commits with the charge.
 * `?`: auditOfChargeParams.
 */
export const AUDIT_OF_CHARGE = `audit as (insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms)
     select ?::uuid, id, ?::uuid, ?, ?, ?::boolean, true, ?::integer from charged)`;
export const auditOfChargeParams = (entry: AuditEntry) => [
  entry.id,
  entry.principal.keyId,
  entry.cacheKey,
  entry.outcome,
  entry.cacheHit,
  durationOf(entry),
];

/**
 * The request's row once its charge was refunded, as a CTE of the refund's one statement
 * (trace.data.ts): only when `removed` (the ledger charge) holds a row. `?`: the outcome, the request id.
 */
export const AUDIT_OF_REFUND = `refund_audit as (update skip_trace_requests set charged = false, outcome = ? where id = ?::uuid and exists (select from removed))`;
