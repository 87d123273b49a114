import type { Db } from '../infra/database/sql.js';
import { recordAudit, type ListItemRef } from '../billing/audit.js';
import type { OrganizationPrincipal } from '../schema/principal.js';
import type { SkipTraceMetrics } from './skip-trace.metrics.js';

export interface TraceCall {
  /** Also the key of its ledger charge and audit row. */
  id: string;
  principal: OrganizationPrincipal;
  startedAt: number;
  /** Known once its input was checked. */
  cacheKey: string | null;
  list?: ListItemRef;
}

/** The one recorder of an uncharged outcome, whoever refused; a charged row is written by its charge. */
export function recordOutcome(deps: { db: Db; metrics: SkipTraceMetrics }, call: TraceCall, outcome: string): Promise<void> {
  deps.metrics.outcomes.inc({ outcome });
  return recordAudit(deps.db, { ...call, outcome });
}
