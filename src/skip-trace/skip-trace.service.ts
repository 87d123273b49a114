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
  /** Also the key of the call's ledger charge and audit row. */
  id: string;
  creditsRemaining: number;
  cacheHit: boolean;
  replayed: boolean;
}

export interface SkipTraceDeps {
  db: Db;
  traces: TraceCoordinator;
  admission: SkipTraceAdmission;
  metrics: SkipTraceMetrics;
  log: Logger;
  client: ClientWatch;
  /** Held already by the REST route's `holdSlot` hook, so not taken twice. */
  slotHeld?: boolean;
  timeoutMs: number;
  /** A job's items started together share one opening read (jobs/job-items.ts). */
  open?: (organizationId: string, cacheKey: string) => Promise<OpenedTrace>;
}

/** A job's items run with no request: never gone, nothing to refund. */
export const UNWATCHED: ClientWatch = {
  signal: new AbortController().signal,
  onUndelivered: () => undefined,
  onDone: () => undefined,
  stalledMs: () => 0,
  disconnect: () => undefined,
};

export const traceDeps = (services: Services, client: ClientWatch = UNWATCHED): SkipTraceDeps => ({
  db: services.sql,
  traces: services.traces,
  admission: services.skipTraceAdmission,
  metrics: services.skipTraceMetrics,
  log: services.log,
  client,
  timeoutMs: services.config.limits.skipTraceTimeoutMs,
});

/** A request settles its claim well within the trace timeout, so only a dead instance's claim runs this out. */
const CLAIM_LEASE_MARGIN_MS = 30_000;

export interface SkipTraceOptions {
  idempotent?: IdempotentCall;
  /** A REST body met the JSON Schema already (`variablesChecked`). */
  inputMetSchema?: boolean;
}

/** Steps in the contract's order of refusals, each once (docs/architecture.md, "One skip trace"). */
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

export interface KeyedRequestSteps<Checked, Result> {
  /** Before the key is claimed, so a bad input claims nothing. */
  check(): Checked;
  replay(answer: StoredAnswer<Result>): Promise<Result>;
  run(checked: Checked, hold: KeyHold | undefined): Promise<Result>;
}

/** Any end but an answer is audited once, here, and settles the key's claim. */
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

export interface TraceSteps extends ChargeSteps {
  /** The charge stores the key's answer under it. */
  hold?: KeyHold;
  resolve?: ResolveOptions;
  /** False for a list that keeps its results: the charge stands even if the response is lost. */
  refundUndelivered?: boolean;
}

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

/** Never throws: it runs on the error path. */
export async function recordFailure(deps: SkipTraceDeps, call: TraceCall, error: unknown): Promise<void> {
  await recordOutcome(deps, call, outcomeOf(error)).catch((auditError) =>
    deps.log.error({ err: auditError, requestId: call.id }, 'could not record the skip trace audit row'),
  );
}
