/**
 * Every request its rate window admitted gets exactly one row, refused afterwards or not; one the
 * window refused writes nothing. A charged row commits with its charge, in the same statement.
 */
import type { OrganizationPrincipal } from '../schema/principal.js';
import { AppError } from '../common/errors.js';
import { raw, sql, type Db } from '../infra/database/sql.js';

export interface AuditEntry {
  /** Also the key of its ledger charge. */
  id: string;
  principal: OrganizationPrincipal;
  startedAt: number;
  outcome: string;
  cacheKey: string | null;
  cacheHit: boolean;
  charged: boolean;
  list?: ListItemRef;
}

export interface ListItemRef {
  batchId: string | null;
  jobId: string | null;
  key: string | null;
}

const listColumns = (entry: Pick<AuditEntry, 'list'>) => [entry.list?.batchId ?? null, entry.list?.jobId ?? null, entry.list?.key ?? null];

export const CALLER_GONE = 'client_closed';

export const REPLAYED = 'replayed';

export class CallerGoneError extends AppError {
  constructor() {
    super('internal_error', 'The caller closed the connection before the trace completed.');
  }
}

/** The error's REST name, whichever route the request came through. */
export function outcomeOf(error: unknown): string {
  if (error instanceof CallerGoneError) return CALLER_GONE;
  if (!(error instanceof AppError)) return 'internal_error';
  return error.replayOf ? REPLAYED : error.kind;
}

const durationOf = (entry: Pick<AuditEntry, 'startedAt'>) => Math.round(performance.now() - entry.startedAt);

export async function recordAudit(db: Db, entry: Omit<AuditEntry, 'cacheHit' | 'charged'>): Promise<void> {
  const [batchId, jobId, key] = listColumns(entry);
  await db.run(
    sql`insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms, batch_id, job_id, key)
        values (${entry.id}, ${entry.principal.organizationId}, ${entry.principal.keyId}, ${entry.cacheKey}, ${entry.outcome}, false, false, ${durationOf(entry)},
          ${batchId}::uuid, ${jobId}::uuid, ${key})`,
  );
}

/** Written only when `charged` holds a row, so it commits with the charge. */
export const auditOfCharge = (entry: Omit<AuditEntry, 'charged'>) => {
  const [batchId, jobId, key] = listColumns(entry);
  return sql`audit as (insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms, batch_id, job_id, key)
     select ${entry.id}::uuid, id, ${entry.principal.keyId}::uuid, ${entry.cacheKey}, ${entry.outcome}, ${entry.cacheHit}::boolean, true, ${durationOf(entry)}::integer,
       ${batchId}::uuid, ${jobId}::uuid, ${key}::text from charged)`;
};

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

export const CHARGED_AUDIT_COLUMNS = raw(
  'request_id uuid, key_id uuid, cache_key text, outcome text, cache_hit boolean, duration_ms integer, batch_id uuid, job_id uuid, key text',
);

/** One row per row of `charged`, so only charged items are audited as charged. */
export const auditOfCharges = (organizationId: string, charged: string) =>
  sql`audit as (insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms, batch_id, job_id, key)
     select request_id, ${organizationId}::uuid, key_id, cache_key, outcome, cache_hit, true, duration_ms, batch_id, job_id, key from ${raw(charged)})`;

/** Only when `removed` holds a row, so a refund rewrites the row at most once. */
export const auditOfRefund = (refund: { requestId: string; outcome: string }) =>
  sql`refund_audit as (update skip_trace_requests set charged = false, outcome = ${refund.outcome} where id = ${refund.requestId}::uuid and exists (select from removed))`;
