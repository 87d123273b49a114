/**
 * How a job's item runs: through the single trace, item by item (skip-trace/items/: the input's
 * rules, cache, single flight, provider, charge, ledger and audit), with the item's stored result
 * written by the statement that charges it, guarded by this instance's lease on the item. An
 * uncharged result (a failure) is stored on its own. The opening reads of items started together
 * (a claim's) go as one statement.
 */
import type { Services } from '../../schema/context.js';
import type { ChargeOrder } from '../items/charge-order.js';
import type { ItemResult } from '../items/item-result.js';
import type { ListItemInput } from '../items/item-rules.js';
import { ChargeGuardFailed, runTraceItem, type ListRun } from '../items/run-item.js';
import { traceDeps, type SkipTraceDeps } from '../skip-trace.service.js';
import { openTraces } from '../trace.data.js';
import { coalesced } from '../../infra/database/coalesce.js';
import { releaseForRetry, storeChargedCtes, storeUncharged } from './job-queue.data.js';
import type { JobItemRunner } from './job-worker.js';
import type { ItemOutcome } from './jobs.data.js';

/**
 * A job's items charge as they finish: they run on any instance, so there is no one place to line
 * them up in index order; items are claimed in index order, which keeps charges close to it.
 */
const AS_THEY_FINISH: ChargeOrder = { turn: async () => undefined, settle: () => undefined };

/**
 * An item whose trace timed out is tried again (uncharged, its trace still running and caching
 * its result), up to this many times in all: enough to outlast the cross-instance single flight's
 * lock (four trace timeouts) when the instance that held it died mid-trace.
 */
const MAX_TIMEOUT_ATTEMPTS = 5;

const outcomeOf = (result: ItemResult): ItemOutcome => ({
  status: result.status === 'records_found' || result.status === 'no_records_found' ? result.status : 'failed',
  id: result.id,
  persons: result.persons,
  error: result.error,
});

export function jobItemRunner(services: Services): JobItemRunner {
  // Items claimed together start together: their opening reads go as one statement.
  const open = coalesced((opens: { organizationId: string; cacheKey: string }[]) => openTraces(services.sql, opens));
  const deps: SkipTraceDeps = { ...traceDeps(services), open: (organizationId, cacheKey) => open({ organizationId, cacheKey }) };
  return async (item, lease) => {
    const run: ListRun = {
      deps,
      principal: { type: 'organization', keyId: item.keyId, keyHint: '', organizationId: item.organizationId },
      list: { batchId: null, jobId: item.jobId },
      deadline: performance.now() + deps.timeoutMs,
      order: AS_THEY_FINISH,
      // Nobody waits on a job's response: its results are kept, so its charges stand.
      refundUndelivered: false,
    };
    const input = { ...item.input, key: item.key } as ListItemInput;
    let result: ItemResult;
    try {
      result = await runTraceItem(run, item.index, input, (charged) => storeChargedCtes(item, lease, outcomeOf(charged)));
    } catch (error) {
      // The lease ran out and another instance holds the item: it is theirs to settle.
      if (error instanceof ChargeGuardFailed) return;
      throw error;
    }
    if (result.status !== 'failed') return;
    if (result.error?.code === 'timeout' && item.attempts < MAX_TIMEOUT_ATTEMPTS)
      return releaseForRetry(services.sql, item, lease, lease.ms);
    await storeUncharged(services.sql, item, lease, outcomeOf(result));
  };
}
