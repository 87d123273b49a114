/**
 * An item's result is written by the statement that charges it, guarded by this instance's lease,
 * so a taken-over item is never charged twice.
 */
import type { Services } from '../../schema/context.js';
import type { ChargeOrder } from '../items/charge-order.js';
import type { ItemResult } from '../items/item-result.js';
import type { ListItemInput } from '../items/item-rules.js';
import { ChargeGuardFailed, runTraceItem, type ListRun } from '../items/run-item.js';
import { traceDeps, type SkipTraceDeps } from '../skip-trace.service.js';
import { openTraces, type ChargeOutcome } from '../trace.data.js';
import type { AuditEntry } from '../../billing/audit.js';
import type { Db } from '../../infra/database/sql.js';
import { coalesced } from '../../infra/database/coalesce.js';
import { chargeItems, releaseForRetry, storeUncharged, type ItemCharge, type Lease } from './job-queue.data.js';
import type { JobItemRunner } from './job-worker.js';
import type { ItemOutcome } from './jobs.data.js';

/** Items run on any instance, so nothing can line charges up in index order; claiming in index order keeps them close. */
const AS_THEY_FINISH: ChargeOrder = { turn: async () => undefined, settle: () => undefined };

/** Of an item given back to the queue: enough to outlast the single flight's lock when the instance that held it died mid-trace. */
const MAX_ATTEMPTS = 5;

/** A charge statement that failed outright (a dropped connection, a deadlock's victim) is tried again this soon. */
const CHARGE_RETRY_DELAY_MS = 1000;

/**
 * Its trace is cached, so another attempt costs no vendor call; an item the statement did write is
 * settled, and giving it back does nothing. A ChargeGuardFailed, so runTraceItem passes it on unaudited.
 */
class ChargeNotWritten extends ChargeGuardFailed {
  constructor(readonly reason: unknown) {
    super();
  }
}

const outcomeOf = (result: ItemResult): ItemOutcome => ({
  status: result.status === 'records_found' || result.status === 'no_records_found' ? result.status : 'failed',
  id: result.id,
  persons: result.persons,
  error: result.error,
});

/** A failed statement fails only its own items. */
function chargeTogether(db: Db) {
  return coalesced(async (charges: { lease: Lease; charge: ItemCharge }[]) => {
    const outcomes: (ChargeOutcome | { failed: unknown })[] = new Array(charges.length);
    const groups = new Map<string, number[]>();
    charges.forEach(({ lease, charge }, i) => {
      const group = `${lease.token}/${charge.item.organizationId}`;
      const members = groups.get(group);
      if (members) members.push(i);
      else groups.set(group, [i]);
    });
    await Promise.all(
      [...groups.values()].map(async (members) => {
        const { lease, charge } = charges[members[0]];
        try {
          const done = await chargeItems(
            db,
            lease,
            charge.item.organizationId,
            members.map((i) => charges[i].charge),
          );
          members.forEach((i, j) => (outcomes[i] = done[j]));
        } catch (error) {
          for (const i of members) outcomes[i] = { failed: error };
        }
      }),
    );
    return outcomes;
  });
}

export function jobItemRunner(services: Services): JobItemRunner {
  const open = coalesced((opens: { organizationId: string; cacheKey: string }[]) => openTraces(services.sql, opens));
  const chargeReady = chargeTogether(services.sql);
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
    const mayGiveBack = item.attempts < MAX_ATTEMPTS;
    const charge = async (entry: AuditEntry, charged: ItemResult) => {
      const outcome = await chargeReady({ lease, charge: { item, entry, outcome: outcomeOf(charged) } });
      if (typeof outcome === 'object' && 'failed' in outcome) throw mayGiveBack ? new ChargeNotWritten(outcome.failed) : outcome.failed;
      return outcome;
    };
    let result: ItemResult;
    try {
      result = await runTraceItem(run, item.index, input, { charge });
    } catch (error) {
      if (error instanceof ChargeNotWritten) {
        deps.log.warn(
          { err: error.reason, jobId: item.jobId, index: item.index },
          'the charge statement of a job item failed; the item runs again',
        );
        return releaseForRetry(services.sql, item, lease, CHARGE_RETRY_DELAY_MS);
      }
      // Another instance took the item over: it is theirs to settle.
      if (error instanceof ChargeGuardFailed) return;
      throw error;
    }
    if (result.status !== 'failed') return;
    if (result.error?.code === 'timeout' && mayGiveBack) return releaseForRetry(services.sql, item, lease, lease.ms);
    await storeUncharged(services.sql, item, lease, outcomeOf(result));
  };
}
