/**
 * The skip trace audit (`skip_trace_requests`, raw SQL: one row per request, on the hot path):
 * every skip trace request of a valid skip trace key that its rate window admitted gets one row,
 * refused afterwards or not; one the window refused writes nothing. This module decides each
 * row: a charged trace's is written by the charge's statement (auditOfCharge), any other end by
 * recordOutcome, and a refund rewrites the charged row (auditOfRefund).
 */
import type { OrganizationPrincipal } from '../schema/principal.js';
import { AppError } from '../common/errors.js';
import { raw, sql, type Db } from '../infra/database/sql.js';

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
  /** The list (a batch or a job) the request is an item of, and the item's key; absent for a single call. */
  list?: ListItemRef;
}

/** An item of a list, as its usage row names it. */
export interface ListItemRef {
  batchId: string | null;
  jobId: string | null;
  key: string | null;
}

const listColumns = (entry: Pick<AuditEntry, 'list'>) => [entry.list?.batchId ?? null, entry.list?.jobId ?? null, entry.list?.key ?? null];

/** The audit outcome of a call whose caller left before its response was delivered. */
export const CALLER_GONE = 'client_closed';

/** The audit outcome of a call answered with the stored answer of its Idempotency-Key's first request (uncharged). */
export const REPLAYED = 'replayed';

/** The caller went away before the trace was charged: nothing is charged, nothing is answered. */
export class CallerGoneError extends AppError {
  constructor() {
    super('internal_error', 'The caller closed the connection before the trace completed.');
  }
}

/** The outcome a request that ended with `error` is audited with: the error's REST name, whichever route it came through. */
export function outcomeOf(error: unknown): string {
  if (error instanceof CallerGoneError) return CALLER_GONE;
  if (!(error instanceof AppError)) return 'internal_error';
  return error.replayOf ? REPLAYED : error.kind;
}

const durationOf = (entry: Pick<AuditEntry, 'startedAt'>) => Math.round(performance.now() - entry.startedAt);

/** Writes the row of an uncharged request: a refusal (route or service), a replay, a failure. */
export async function recordAudit(db: Db, entry: Omit<AuditEntry, 'cacheHit' | 'charged'>): Promise<void> {
  const [batchId, jobId, key] = listColumns(entry);
  await db.run(
    sql`insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms, batch_id, job_id, key)
        values (${entry.id}, ${entry.principal.organizationId}, ${entry.principal.keyId}, ${entry.cacheKey}, ${entry.outcome}, false, false, ${durationOf(entry)},
          ${batchId}::uuid, ${jobId}::uuid, ${key})`,
  );
}

/**
 * The row of a charged trace, as a CTE of the charge's statement (skip-trace/trace.data.ts):
 * written only when `charged` (charge.ts) holds a row, so it commits with the charge.
 */
export const auditOfCharge = (entry: Omit<AuditEntry, 'charged'>) => {
  const [batchId, jobId, key] = listColumns(entry);
  return sql`audit as (insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms, batch_id, job_id, key)
     select ${entry.id}::uuid, id, ${entry.principal.keyId}::uuid, ${entry.cacheKey}, ${entry.outcome}, ${entry.cacheHit}::boolean, true, ${durationOf(entry)}::integer,
       ${batchId}::uuid, ${jobId}::uuid, ${key}::text from charged)`;
};

/**
 * The fields of a charged trace's row, for auditOfCharges: one object per request, sent as a
 * JSON record set whose columns are CHARGED_AUDIT_COLUMNS.
 */
export const chargedAuditFields = (entry: Omit<AuditEntry, 'charged'>) => {
  const [batchId, jobId, key] = listColumns(entry);
  return {
    request_id: entry.id,
    key_id: entry.principal.keyId,
    cache_key: entry.cacheKey,
    outcome: entry.outcome,
    cache_hit: entry.cacheHit,
    duration_ms: durationOf(entry),
    batch_id: batchId,
    job_id: jobId,
    key,
  };
};

/** The record set columns of chargedAuditFields. */
export const CHARGED_AUDIT_COLUMNS = raw(
  'request_id uuid, key_id uuid, cache_key text, outcome text, cache_hit boolean, duration_ms integer, batch_id uuid, job_id uuid, key text',
);

/** The rows of several charged traces of `organizationId`, as a CTE of their charge's statement: one per row of `charged` (chargedAuditFields columns). */
export const auditOfCharges = (organizationId: string, charged: string) =>
  sql`audit as (insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms, batch_id, job_id, key)
     select request_id, ${organizationId}::uuid, key_id, cache_key, outcome, cache_hit, true, duration_ms, batch_id, job_id, key from ${raw(charged)})`;

/** The request's row once its charge was refunded, as a CTE of the refund's statement: only when `removed` (charge.ts) holds a row. */
export const auditOfRefund = (refund: { requestId: string; outcome: string }) =>
  sql`refund_audit as (update skip_trace_requests set charged = false, outcome = ${refund.outcome} where id = ${refund.requestId}::uuid and exists (select from removed))`;
