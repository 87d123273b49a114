import { setImmediate } from 'node:timers/promises';
import { CallerGoneError, type AuditEntry } from '../billing/audit.js';
import { skipTraceAccount } from '../billing/skip-trace-account.js';
import type { KeyHold } from './idempotency/idempotent-request.js';
import type { TraceCall } from './outcome.js';
import type { SkipTraceDeps, SkipTraceResponse } from './skip-trace.service.js';
import type { ResolvedTrace } from './trace-coordinator.js';
import { ChargeGuardFailed, chargeTrace, type ChargeExtra, type ChargeOutcome } from './trace.data.js';

export interface ChargeSteps {
  /** May refuse by throwing; an item waits here for its turn in index order. */
  beforeCharge?: () => Promise<void>;
  /** In the charge's own statement, so neither commits without the other. */
  alsoInCharge?: (response: SkipTraceResponse) => ChargeExtra;
  /** A job's items ready together are charged in one statement (jobs/job-queue.data.ts). */
  charge?: (entry: AuditEntry, response: SkipTraceResponse) => Promise<ChargeOutcome>;
}

/** A caller already gone is not charged. */
export async function chargeForResult(
  deps: SkipTraceDeps,
  call: TraceCall & { cacheKey: string },
  traced: ResolvedTrace,
  hold: KeyHold | undefined,
  steps: ChargeSteps = {},
): Promise<SkipTraceResponse> {
  const { client } = deps;
  await steps.beforeCharge?.();
  await ensureCallerStillThere(deps);
  const response: SkipTraceResponse = {
    id: call.id,
    status: traced.result.status,
    persons: traced.result.persons,
    creditsRemaining: 0,
    cacheHit: traced.cacheHit,
    replayed: false,
  };
  const entry: AuditEntry = { ...call, outcome: traced.result.status, cacheHit: traced.cacheHit, charged: true };
  const stored = hold && { claim: hold.claim, answer: response };
  const charged = steps.charge
    ? await steps.charge(entry, response)
    : await chargeTrace(deps.db, entry, stored, steps.alsoInCharge?.(response));
  // A released or taken-over claim must not be answered twice: nothing was charged.
  if (charged === 'claim_lost') throw client.signal.aborted ? new CallerGoneError() : new Error('The Idempotency-Key claim was lost.');
  if (charged === 'no_credit') throw skipTraceAccount.noCreditsLeft();
  if (charged === 'guard_failed') throw new ChargeGuardFailed();
  response.creditsRemaining = charged.creditsRemaining;
  // Counted once committed: no charge written is no charge.
  deps.metrics.creditsCharged.inc();
  deps.metrics.outcomes.inc({ outcome: traced.result.status });
  return response;
}

/**
 * A close is seen only once the event loop reads the socket, and the embedded database runs on this
 * thread: two turns let a pending close be read (the first lands before this poll, the second after).
 */
async function ensureCallerStillThere(deps: Pick<SkipTraceDeps, 'client'>): Promise<void> {
  await setImmediate();
  await setImmediate();
  if (deps.client.signal.aborted) throw new CallerGoneError();
}
