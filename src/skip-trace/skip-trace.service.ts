import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import type { OrganizationPrincipal } from '../schema/principal.js';
import type { Sql } from '../infra/database/sql.js';
import { AppError } from '../common/errors.js';
import type { IdempotencyKey } from '../schema/context.js';
import type { SkipTraceAdmission } from './admission.js';
import { CALLER_GONE, recordAudit, REPLAYED } from '../billing/audit.js';
import type { Logger } from 'pino';
import type { ClientWatch } from '../infra/client-watch.js';
import { skipTraceAccount } from '../billing/skip-trace-account.js';
import { UnresolvableAddressError, type TraceResult } from './providers/provider.js';
import type { TraceCoordinator } from './trace-coordinator.js';
import type { SkipTraceMetrics } from './skip-trace.metrics.js';
import { validateTraceInput, type SkipTraceInput } from './trace-input.js';
import { releaseKey } from './idempotency/idempotency-keys.data.js';
import {
  beginIdempotentRequest,
  replayedError,
  settleFailedClaim,
  type IdempotencyClaim,
  type StoredAnswer,
} from './idempotency/idempotent-request.js';
import { chargeTrace, openTrace, refundUndelivered, type CarriedCharge } from './trace.data.js';

export interface SkipTraceResponse extends TraceResult {
  /** A new UUID per call, also the key of its ledger charge and audit row. */
  id: string;
  /** The organization's balance right after this call's charge. */
  creditsRemaining: number;
  /** Whether the result came from the cache rather than the provider. */
  cacheHit: boolean;
  /** Whether this is the stored answer of an earlier request with the same Idempotency-Key. */
  replayed: boolean;
}

/** The request that carries an Idempotency-Key, and the id its error body names. */
export interface IdempotentCall {
  idempotencyKey: IdempotencyKey;
  requestId: string;
}

/**
 * How long a claimed Idempotency-Key stays claimed at most, past the trace timeout: the request
 * ends (and settles its claim) well within it, so only a claim whose instance died runs it out.
 */
const CLAIM_LEASE_MARGIN_MS = 30_000;

/** The caller went away before the trace was charged: nothing is charged, nothing is answered. */
export class CallerGoneError extends AppError {
  constructor() {
    super('internal_error', 'The caller closed the connection before the trace completed.');
  }
}

/**
 * One skip trace, in contract order: input (422), the Idempotency-Key when the call carries one
 * (409, 422, or the replay of its first answer), feature (403), credits (402), then the trace
 * (cache or provider, with the timeout), then the charge. The charge, its ledger row, the audit
 * row and the key's stored answer are one statement (trace.data.ts), so a 200 always has exactly
 * one charge, an error never has one, and a key's replays never charge again. The feature, the
 * balance and the cache are one statement too: a cached trace is two round trips to the database.
 *
 * A charge needs a delivered response: a caller gone before the charge is not charged, and one
 * gone before its response was written in full has the charge reversed, unless a replay of its
 * Idempotency-Key delivered the result meanwhile (refundUndelivered).
 */
export async function runSkipTrace(
  deps: {
    sql: Sql;
    traces: TraceCoordinator;
    admission: SkipTraceAdmission;
    metrics: SkipTraceMetrics;
    log: Logger;
    client: ClientWatch;
    timeoutMs: number;
  },
  principal: OrganizationPrincipal,
  input: SkipTraceInput,
  idempotent?: IdempotentCall,
): Promise<SkipTraceResponse> {
  const { sql, traces, client } = deps;
  const requestId = randomUUID();
  const startedAt = performance.now();
  let cacheKey: string | null = null;
  let claim: IdempotencyClaim | null = null;
  // The caller leaving frees its key at once, so its retry need not wait for the trace to end.
  const releaseOnLeave = () => {
    if (claim)
      releaseKey(deps.sql, claim).catch((error) => deps.log.error({ err: error, requestId }, 'could not release an idempotency key'));
  };
  try {
    // Released when the response is done or the caller leaves (admission.ts).
    deps.admission.admit(principal.keyId, client);
    const trace = validateTraceInput(input);
    cacheKey = trace.cacheKey;
    if (idempotent) {
      const begun = await beginIdempotentRequest<SkipTraceResponse>(
        deps.sql,
        principal.organizationId,
        idempotent.idempotencyKey,
        deps.timeoutMs + CLAIM_LEASE_MARGIN_MS,
      );
      if ('replay' in begun) return await replay(deps, { principal, requestId, startedAt, cacheKey }, begun.replay);
      claim = begun.claim;
      // A caller gone while the key was being claimed never fires the listener: end here, which releases it.
      if (client.signal.aborted) throw new CallerGoneError();
      client.signal.addEventListener('abort', releaseOnLeave, { once: true });
    }
    const opened = await openTrace(sql, principal.organizationId, trace.cacheKey);
    skipTraceAccount.ensureCanTrace(opened.account);

    let resolved;
    try {
      resolved = await traces.resolve(trace.cacheKey, { requestId, address: trace.address, actor: trace.actor }, opened.cached);
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
    // creditsRemaining is the balance the charge leaves (set by the statement in the stored answer).
    const response: SkipTraceResponse = {
      id: requestId,
      status: result.status,
      persons: result.persons,
      creditsRemaining: 0,
      cacheHit,
      replayed: false,
    };
    const charged = await chargeTrace(
      sql,
      { id: requestId, principal, startedAt, outcome: result.status, cacheKey, cacheHit, charged: true },
      claim ? { claim, answer: response } : undefined,
    );
    // A claim released because the caller left, or taken over once its lease ran out, must not
    // be answered twice: nothing was charged.
    if (charged === 'claim_lost') throw client.signal.aborted ? new CallerGoneError() : new Error('The Idempotency-Key claim was lost.');
    if (charged === 'no_credit') throw skipTraceAccount.noCreditsLeft();
    response.creditsRemaining = charged.creditsRemaining;
    // Counted once committed: no charge written is no charge.
    deps.metrics.creditsCharged.inc();
    deps.metrics.outcomes.inc({ outcome: result.status });
    // A caller gone meanwhile (even before the charge committed) has it reversed at once.
    client.onUndelivered(() => reverseUndelivered(deps, { organizationId: principal.organizationId, requestId, keyed: claim !== null }));
    return response;
  } catch (error) {
    // Outcomes are the errors' REST names, whichever route the call came through.
    const outcome =
      error instanceof CallerGoneError
        ? CALLER_GONE
        : error instanceof AppError
          ? error.replayOf
            ? REPLAYED
            : error.kind
          : 'internal_error';
    deps.metrics.outcomes.inc({ outcome });
    await recordAudit(sql, { id: requestId, principal, startedAt, outcome, cacheKey, cacheHit: false, charged: false }).catch(
      (auditError) => deps.log.error({ err: auditError, requestId }, 'could not record the skip trace audit row'),
    );
    if (claim && idempotent)
      await settleFailedClaim(sql, claim, error, !(error instanceof CallerGoneError), idempotent.requestId).catch((settleError) =>
        deps.log.error({ err: settleError, requestId }, 'could not settle an idempotency key'),
      );
    throw error;
  } finally {
    client.signal.removeEventListener('abort', releaseOnLeave);
  }
}

/**
 * Reverses the charge of a result whose response was not written in full, unless another response
 * delivered it (refundUndelivered); counted once it was.
 */
function reverseUndelivered(deps: { sql: Sql; metrics: SkipTraceMetrics; log: Logger }, charge: CarriedCharge) {
  refundUndelivered(deps.sql, charge, CALLER_GONE).then(
    (refunded) => refunded && deps.metrics.creditsRefunded.inc(),
    (error) => deps.log.error({ err: error, requestId: charge.requestId }, 'could not reverse the charge of an undelivered skip trace'),
  );
}

/**
 * Answers with a key's stored answer: a stored result is returned as it was (same id, same
 * balance and cache headers), a stored error thrown as it was; nothing is charged, and the audit
 * records the call as `replayed`. Reading a result counted this response as one of its carriers:
 * if it is not written in full either, that is reported as the first request's loss is.
 */
async function replay(
  deps: { sql: Sql; metrics: SkipTraceMetrics; log: Logger; client: ClientWatch },
  call: { principal: OrganizationPrincipal; requestId: string; startedAt: number; cacheKey: string },
  answer: StoredAnswer<SkipTraceResponse>,
): Promise<SkipTraceResponse> {
  // An error is audited by runSkipTrace's error path, as any error is.
  if ('error' in answer) throw replayedError(answer.error);
  const carried = { organizationId: call.principal.organizationId, requestId: answer.result.id, keyed: true };
  try {
    await recordAudit(deps.sql, { id: call.requestId, ...call, outcome: REPLAYED, cacheHit: false, charged: false });
  } catch (error) {
    // This response will carry an error instead.
    reverseUndelivered(deps, carried);
    throw error;
  }
  deps.metrics.outcomes.inc({ outcome: REPLAYED });
  deps.client.onUndelivered(() => reverseUndelivered(deps, carried));
  return { ...answer.result, replayed: true };
}
