import type { Db } from '../infra/database/sql.js';
import { recordAudit, type ListItemRef } from '../billing/audit.js';
import type { OrganizationPrincipal } from '../schema/principal.js';
import type { SkipTraceMetrics } from './skip-trace.metrics.js';

/** One skip trace request, as its audit row names it. */
export interface TraceCall {
  /** A new UUID per request: the `id` a 200 returns, the key of its ledger charge and audit row. */
  id: string;
  principal: OrganizationPrincipal;
  /** `performance.now()` when the request began. */
  startedAt: number;
  /** Known once its input was checked. */
  cacheKey: string | null;
  /** The list (a batch or a job) the request is an item of; absent for a single call. */
  list?: ListItemRef;
}

/**
 * The one recorder of an uncharged request's outcome (its metric and audit row), whoever refused
 * it: the REST route before the trace ran (the slot, the body), or the trace itself (a refusal, a
 * failure, a replay). A charged trace's row is written by its charge (trace.data.ts).
 */
export function recordOutcome(deps: { db: Db; metrics: SkipTraceMetrics }, call: TraceCall, outcome: string): Promise<void> {
  deps.metrics.outcomes.inc({ outcome });
  return recordAudit(deps.db, { ...call, outcome });
}
