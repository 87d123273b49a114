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

export interface ListRun {
  deps: SkipTraceDeps;
  principal: OrganizationPrincipal;
  list: { batchId: string | null; jobId: string | null };
  /** `performance.now()`; an item past it fails `timeout` while its trace runs on and caches its result. */
  deadline: number;
  /** So that when credits run out, the first items by index are the charged ones. */
  order: ChargeOrder;
  group?: TraceGroup;
  /** True for a batch; a job keeps its results, so its charges stand. */
  refundUndelivered: boolean;
  /** By index, from an earlier run of the same keyed list: answered, not charged again. */
  chargedAlready?: ReadonlyMap<number, ItemResult>;
}

/** Written in the charge's statement (see ChargeExtra); a failed `guard` writes nothing and throws ChargeGuardFailed. */
export type AlsoInCharge = (result: ItemResult) => { ctes: Statement; guard?: Statement };

/** Lets a job charge several items in one statement (chargeItems). */
export interface ChargedByCaller {
  charge: (entry: AuditEntry, result: ItemResult) => Promise<ChargeOutcome>;
}

/** Never throws but ChargeGuardFailed: a failure is the item's result, audited and not charged. */
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
