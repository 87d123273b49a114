import { randomUUID } from 'node:crypto';
import type { OrganizationPrincipal } from '../../schema/principal.js';
import { AppError } from '../../common/errors.js';
import type { Statement } from '../../infra/database/sql.js';
import type { TraceGroup } from '../providers/provider.js';
import type { TraceCall } from '../outcome.js';
import { recordFailure, traceAndCharge, type SkipTraceDeps } from '../skip-trace.service.js';
import { traceTimedOut } from '../trace-coordinator.js';
import { ChargeGuardFailed, type ChargeOutcome } from '../trace.data.js';
import type { AuditEntry } from '../../billing/audit.js';
import type { ChargeOrder } from './charge-order.js';
import { failedItem, tracedItem, type ItemResult } from './item-result.js';
import { checkItem, type ListItemInput } from './item-rules.js';

export { ChargeGuardFailed } from '../trace.data.js';

/** One list's run: who traces, which list it is, and what its items share. */
export interface ListRun {
  deps: SkipTraceDeps;
  principal: OrganizationPrincipal;
  /** The list its items' usage rows name. */
  list: { batchId: string | null; jobId: string | null };
  /** `performance.now()` past which an item not finished fails `timeout` (its trace runs on and caches its result). */
  deadline: number;
  /** The items' charges, in index order. */
  order: ChargeOrder;
  /** The provider group the items' traces may share calls in. */
  group?: TraceGroup;
  /** Whether an item's charge is reversed when the response carrying it is not delivered (a batch's); a job keeps its results. */
  refundUndelivered: boolean;
  /** Items charged by an earlier run of the same keyed list, by index: answered with that result, not run again. */
  chargedAlready?: ReadonlyMap<number, ItemResult>;
}

/**
 * What the caller writes with an item's charge, in the same statement: `ctes` (they may read the
 * CTE `charged`, which holds a row only when the credit was taken) and an optional `guard`, a
 * boolean SQL expression the charge also requires; when it fails nothing is written and the item
 * throws ChargeGuardFailed.
 */
export type AlsoInCharge = (result: ItemResult) => { ctes: Statement; guard?: Statement };

/**
 * Or the item's charge made by the caller (`charge`, with the item's result and its audit entry):
 * it writes what AlsoInCharge would, in the charge's statement, and answers what became of it.
 */
export interface ChargedByCaller {
  charge: (entry: AuditEntry, result: ItemResult) => Promise<ChargeOutcome>;
}

/**
 * Runs item `index` of a list through the single trace (the input's rules, the opening read, cache,
 * single flight, provider, charge with its ledger and audit rows, refund), as its own request: a
 * new id, its usage row naming the list and its key. Never throws but ChargeGuardFailed: a failure
 * is the item's result, audited and not charged.
 */
export async function runTraceItem(
  run: ListRun,
  index: number,
  item: ListItemInput,
  inCharge?: AlsoInCharge | ChargedByCaller,
): Promise<ItemResult> {
  const { deps, principal } = run;
  const key = item.key ?? null;
  const call: TraceCall = {
    id: randomUUID(),
    principal,
    startedAt: performance.now(),
    cacheKey: null,
    list: { ...run.list, key },
  };
  let failure: unknown;
  try {
    const trace = checkItem(item);
    call.cacheKey = trace.cacheKey;
    const response = await traceAndCharge(deps, { ...call, cacheKey: trace.cacheKey }, trace, {
      resolve: { timeoutMs: Math.max(0, run.deadline - performance.now()), group: run.group },
      // The deadline is checked before the turn: an item done in time may wait for its turn past it.
      beforeCharge: async () => {
        if (performance.now() > run.deadline) throw traceTimedOut(deps.timeoutMs);
        await run.order.turn(index);
      },
      ...(typeof inCharge === 'function'
        ? { alsoInCharge: (charged) => inCharge(tracedItem(index, key, charged)) }
        : inCharge && { charge: (entry, charged) => inCharge.charge(entry, tracedItem(index, key, charged)) }),
      refundUndelivered: run.refundUndelivered,
    });
    return tracedItem(index, key, response);
  } catch (error) {
    failure = error;
    if (error instanceof ChargeGuardFailed) throw error;
    // An item's answer masks what is not ours to tell (as the HTTP host does for a request): the log keeps it.
    if (!(error instanceof AppError)) deps.log.error({ err: error, requestId: call.id }, 'a skip trace list item failed');
    await recordFailure(deps, call, error);
    return failedItem(index, key, call.id, error);
  } finally {
    run.order.settle(index, failure);
  }
}

/** Runs every item of a list, at most `concurrency` at a time and starting in index order; their results in index order. */
export async function runTraceItems(
  run: ListRun,
  items: readonly ListItemInput[],
  concurrency: number,
  alsoInCharge?: AlsoInCharge,
): Promise<ItemResult[]> {
  const results: ItemResult[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      const earlier = run.chargedAlready?.get(index);
      if (earlier) run.order.settle(index);
      results[index] = earlier ?? (await runTraceItem(run, index, items[index], alsoInCharge));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}
