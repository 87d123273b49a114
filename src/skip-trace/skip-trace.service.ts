import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { OrganizationPrincipal } from '../schema/principal.js';
import type { Db } from '../infra/database/sql.js';
import type { ClientWatch } from '../infra/client-watch.js';
import type { Services } from '../schema/context.js';
import { outcomeOf } from '../billing/audit.js';
import { skipTraceAccount } from '../billing/skip-trace-account.js';
import type { SkipTraceAdmission } from './admission.js';
import { chargeForResult, type ChargeSteps } from './charge-result.js';
import { holdIdempotencyKey, type IdempotentCall, type KeyHold, type StoredAnswer } from './idempotency/idempotent-request.js';
import { recordOutcome, type TraceCall } from './outcome.js';
import type { TraceResult } from './providers/provider.js';
import { refundIfUndelivered } from './refund.js';
import { answerWithReplay } from './replay.js';
import type { SkipTraceMetrics } from './skip-trace.metrics.js';
import type { ResolveOptions, TraceCoordinator } from './trace-coordinator.js';
import { checkTraceInput, type SkipTraceInput, type ValidTrace } from './trace-input.js';
import { openTrace, type OpenedTrace } from './trace.data.js';

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

/** What a trace runs on: the process's services and the request's caller. */
export interface SkipTraceDeps {
  db: Db;
  traces: TraceCoordinator;
  admission: SkipTraceAdmission;
  metrics: SkipTraceMetrics;
  log: Logger;
  client: ClientWatch;
  /** The request's in-flight slot is held already (by its REST route's `holdSlot` hook); otherwise runKeyedRequest takes it. */
  slotHeld?: boolean;
  timeoutMs: number;
  /** The opening read, when not a statement of the trace's own (a job's items started together share one: jobs/job-items.ts). */
  open?: (organizationId: string, cacheKey: string) => Promise<OpenedTrace>;
}

/** A caller nobody watches (a job's items run with no request): never gone, nothing to refund. */
export const UNWATCHED: ClientWatch = {
  signal: new AbortController().signal,
  onUndelivered: () => undefined,
  onDone: () => undefined,
  stalledMs: () => 0,
  disconnect: () => undefined,
};

/** What a trace runs on: the process's services, and the request's caller (a single trace's, a batch's) or none (a job's items). */
export const traceDeps = (services: Services, client: ClientWatch = UNWATCHED): SkipTraceDeps => ({
  db: services.sql,
  traces: services.traces,
  admission: services.skipTraceAdmission,
  metrics: services.skipTraceMetrics,
  log: services.log,
  client,
  timeoutMs: services.config.limits.skipTraceTimeoutMs,
});

/**
 * How long a claimed Idempotency-Key stays claimed at most, past the trace timeout: the request
 * ends (and settles its claim) well within it, so only a claim whose instance died runs it out.
 */
const CLAIM_LEASE_MARGIN_MS = 30_000;

/** What a request adds to its trace's input. */
export interface SkipTraceOptions {
  /** Its Idempotency-Key, when it carries one. */
  idempotent?: IdempotentCall;
  /** The input met its JSON Schema form already (a REST body: `variablesChecked`), so only the rules beyond it are checked. */
  inputMetSchema?: boolean;
}

/**
 * One skip trace, in the contract's order, each step once: the in-flight slot (429), the input
 * (422), the Idempotency-Key when the call carries one (409, 422, or the replay of its first
 * answer), the account (403, 402) with the cached result in the same statement, the trace (cache
 * or provider, 504 past the timeout), then the charge (with its audit row and the key's answer,
 * one statement), and its refund should the response not be delivered. Any other end is audited
 * once, here.
 */
export async function runSkipTrace(
  deps: SkipTraceDeps,
  principal: OrganizationPrincipal,
  input: SkipTraceInput,
  options: SkipTraceOptions = {},
): Promise<SkipTraceResponse> {
  const call: TraceCall = { id: randomUUID(), principal, startedAt: performance.now(), cacheKey: null };
  return runKeyedRequest(deps, call, options.idempotent, {
    check: () => {
      const trace = checkTraceInput(input, options.inputMetSchema);
      call.cacheKey = trace.cacheKey;
      return trace;
    },
    replay: (answer) => answerWithReplay(deps, call, answer),
    run: (trace, hold) => traceAndCharge(deps, { ...call, cacheKey: trace.cacheKey }, trace, { hold }),
  });
}

/** A request's own steps, for runKeyedRequest. */
export interface KeyedRequestSteps<Checked, Result> {
  /** Its input, checked before its key is claimed (422). */
  check(): Checked;
  /** Answers with the key's stored answer. */
  replay(answer: StoredAnswer<Result>): Promise<Result>;
  /** The work, once the key (if any) is held. */
  run(checked: Checked, hold: KeyHold | undefined): Promise<Result>;
}

/**
 * A skip trace request (a single trace, a batch) around its own steps: the in-flight slot, the
 * input, the Idempotency-Key when the call carries one (409, 422, or the replay of its first
 * answer), the work; any end but an answer is audited once, here, and settles the key's claim.
 */
export async function runKeyedRequest<Checked, Result>(
  deps: SkipTraceDeps,
  call: TraceCall,
  idempotent: IdempotentCall | undefined,
  steps: KeyedRequestSteps<Checked, Result>,
): Promise<Result> {
  let hold: KeyHold | undefined;
  try {
    if (!deps.slotHeld) deps.admission.holdSlot(call.principal.keyId, deps.client);
    const checked = steps.check();
    if (idempotent) {
      const leaseMs = deps.timeoutMs + CLAIM_LEASE_MARGIN_MS;
      const keyed = await holdIdempotencyKey<Result>({ ...deps, leaseMs }, call.principal.organizationId, idempotent);
      if ('replay' in keyed) return await steps.replay(keyed.replay);
      hold = keyed.hold;
    }
    return await steps.run(checked, hold);
  } catch (error) {
    await recordFailure(deps, call, error);
    await hold?.settle(error);
    throw error;
  } finally {
    hold?.end();
  }
}

/** What a caller of the trace's steps may add to them (an item of a list: skip-trace/items/). */
export interface TraceSteps extends ChargeSteps {
  /** The Idempotency-Key's claim of a keyed call: the charge stores its answer. */
  hold?: KeyHold;
  /** How the trace is resolved: a shorter timeout, a provider group (trace-coordinator.ts). */
  resolve?: ResolveOptions;
  /** False: the charge stands even if the response carrying it is not delivered (a list that keeps its results). */
  refundUndelivered?: boolean;
}

/**
 * The steps of a checked trace: the opening read (the account, 403 or 402, and the cached result,
 * one statement), the trace (cache or provider, 504 past the timeout), the charge (one
 * statement), and its refund should the response not be delivered.
 */
export async function traceAndCharge(
  deps: SkipTraceDeps,
  call: TraceCall & { cacheKey: string },
  trace: ValidTrace,
  steps: TraceSteps = {},
): Promise<SkipTraceResponse> {
  const { organizationId } = call.principal;
  const opened = await (deps.open ? deps.open(organizationId, trace.cacheKey) : openTrace(deps.db, organizationId, trace.cacheKey));
  skipTraceAccount.ensureCanTrace(opened.account);
  const traced = await deps.traces.resolve(trace, call.id, opened.cached, steps.resolve);
  const response = await chargeForResult(deps, call, traced, steps.hold, steps);
  if (steps.refundUndelivered !== false) refundIfUndelivered(deps, { organizationId, requestId: call.id, keyed: steps.hold !== undefined });
  return response;
}

/** Records the end of a call that was not charged, once (its audit row and outcome metric); never throws. */
export async function recordFailure(deps: SkipTraceDeps, call: TraceCall, error: unknown): Promise<void> {
  await recordOutcome(deps, call, outcomeOf(error)).catch((auditError) =>
    deps.log.error({ err: auditError, requestId: call.id }, 'could not record the skip trace audit row'),
  );
}
