import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import type { OrganizationPrincipal } from '../graphql/principal.js';
import type { Em } from '../infra/database/orm.js';
import type { Sql } from '../infra/database/sql.js';
import { AppError } from '../common/errors.js';
import type { SkipTraceAdmission } from './admission.js';
import { CALLER_GONE, recordAudit, recordRefund } from './audit.js';
import type { Logger } from 'pino';
import type { ClientWatch } from '../infra/http/client-watch.js';
import { skipTraceAccount } from './account/skip-trace-account.js';
import { UnresolvableAddressError, type TraceResult } from './providers/provider.js';
import type { TraceCoordinator } from './trace-coordinator.js';
import type { SkipTraceMetrics } from './skip-trace.metrics.js';
import { validateTraceInput, type SkipTraceInput } from './trace-input.js';

export interface SkipTraceResponse extends TraceResult {
  /** A new UUID per call, also the key of its ledger charge and audit row. */
  id: string;
}

/** The caller went away before the trace was charged: nothing is charged, nothing is answered. */
export class CallerGoneError extends AppError {
  constructor() {
    super('internal_error', 'The caller closed the connection before the trace completed.');
  }
}

/**
 * One skip trace, in contract order: input (422), feature (403), credits (402), then the trace
 * (cache or provider, with the timeout), then the charge. The charge, its ledger row and the audit
 * row commit together, so a 200 always has exactly one charge and an error never has one.
 *
 * A charge needs a delivered response: a caller gone before the commit is not charged (the
 * transaction checks last and rolls back), and one gone before its response was written in full
 * has the charge reversed (refundUndelivered).
 */
export async function runSkipTrace(
  deps: {
    em: Em;
    sql: Sql;
    traces: TraceCoordinator;
    admission: SkipTraceAdmission;
    metrics: SkipTraceMetrics;
    log: Logger;
    client: ClientWatch;
  },
  principal: OrganizationPrincipal,
  input: SkipTraceInput,
): Promise<SkipTraceResponse> {
  const { em, traces, client } = deps;
  const requestId = randomUUID();
  const startedAt = performance.now();
  let cacheKey: string | null = null;
  try {
    // Released when the response is done or the caller leaves (admission.ts).
    deps.admission.admit(principal.keyId, client);
    const trace = validateTraceInput(input);
    cacheKey = trace.cacheKey;
    await skipTraceAccount.ensureCanTrace(deps.sql, principal.organizationId);

    let resolved;
    try {
      resolved = await traces.resolve(trace.cacheKey, { requestId, address: trace.address, actor: trace.actor });
    } catch (error) {
      if (error instanceof UnresolvableAddressError)
        throw new AppError('invalid_request', 'The address could not be resolved.', [
          { path: 'address', message: 'could not be resolved to a property' },
        ]);
      throw error;
    }
    const { result, cacheHit } = resolved;
    // A caller that left while the trace ran is seen only once the event loop reads its socket,
    // and the embedded database runs on this thread: two turns of the loop let a pending close
    // be read (the first lands before this iteration's I/O poll, the second after the next).
    await setImmediate();
    await setImmediate();
    if (client.signal.aborted) throw new CallerGoneError();
    await em.transactional(async (tx) => {
      await skipTraceAccount.charge(tx, principal.organizationId, requestId);
      await recordAudit(tx, { id: requestId, principal, startedAt, outcome: result.status, cacheKey, cacheHit, charged: true });
      if (client.signal.aborted) throw new CallerGoneError();
    });
    // Counted once committed: a rolled-back charge is no charge.
    deps.metrics.creditsCharged.inc();
    deps.metrics.outcomes.inc({ outcome: result.status });
    client.onUndelivered(() => {
      refundUndelivered(em.fork(), principal.organizationId, requestId).then(
        (refunded) => refunded && deps.metrics.creditsRefunded.inc(),
        (error) => deps.log.error({ err: error, requestId }, 'could not reverse the charge of an undelivered skip trace'),
      );
    });
    return { id: requestId, status: result.status, persons: result.persons };
  } catch (error) {
    // Outcomes are the errors' REST names, whichever route the call came through.
    const outcome = error instanceof CallerGoneError ? CALLER_GONE : error instanceof AppError ? error.kind : 'internal_error';
    deps.metrics.outcomes.inc({ outcome });
    await recordAudit(deps.sql, { id: requestId, principal, startedAt, outcome, cacheKey, cacheHit: false, charged: false }).catch(
      (auditError) => deps.log.error({ err: auditError, requestId }, 'could not record the skip trace audit row'),
    );
    throw error;
  }
}

/**
 * Undoes the charge of a trace whose response never reached its caller: the credit comes back
 * and the audit row says uncharged, in one transaction. At most once per request id; true when it did.
 */
async function refundUndelivered(em: Em, organizationId: string, requestId: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    const refunded = await skipTraceAccount.refundCharge(tx, organizationId, requestId);
    if (refunded) await recordRefund(tx, requestId, CALLER_GONE);
    return refunded;
  });
}
