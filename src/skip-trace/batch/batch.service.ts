/** Each item runs through the single trace; the batch as a whole holds one slot and one Idempotency-Key. */
import { randomUUID } from 'node:crypto';
import type { OrganizationPrincipal } from '../../schema/principal.js';
import { REPLAYED } from '../../billing/audit.js';
import { skipTraceAccount } from '../../billing/skip-trace-account.js';
import { storeOutcome } from '../idempotency/idempotency-keys.data.js';
import { replayedError, type IdempotentCall, type KeyHold, type StoredAnswer } from '../idempotency/idempotent-request.js';
import { recordOutcome, type TraceCall } from '../outcome.js';
import { runKeyedRequest, type SkipTraceDeps } from '../skip-trace.service.js';
import { chargeInIndexOrder } from '../items/charge-order.js';
import type { ItemResult } from '../items/item-result.js';
import { checkListShape, type ListItemInput } from '../items/item-rules.js';
import { runTraceItems, type AlsoInCharge, type ListRun } from '../items/run-item.js';
import { chargedItemCte, chargedItems, loseBatchCarrier, type KeyedList } from '../idempotency/keyed-items.data.js';
import { refundNow } from '../refund.js';

export const BATCH_MAX_ITEMS = 100;

export interface BatchResponse {
  /** Its items' usage rows name it. */
  id: string;
  charged: number;
  results: ItemResult[];
  creditsRemaining: number;
  replayed: boolean;
}

export interface BatchDeps extends SkipTraceDeps {
  concurrency: number;
}

/** Every item fails `timeout` once the trace timeout has passed since the batch began. */
export async function runSkipTraceBatch(
  deps: BatchDeps,
  principal: OrganizationPrincipal,
  items: readonly ListItemInput[],
  idempotent?: IdempotentCall,
): Promise<BatchResponse> {
  const id = randomUUID();
  const call: TraceCall = { id, principal, startedAt: performance.now(), cacheKey: null, list: { batchId: id, jobId: null, key: null } };
  return runKeyedRequest(deps, call, idempotent, {
    check: () => checkListShape({ items }, { max: BATCH_MAX_ITEMS }),
    replay: (answer) => answerWithStored(deps, call, answer),
    run: async (_items, hold) => {
      skipTraceAccount.ensureCanTrace(await skipTraceAccount.read(deps.db, principal.organizationId));
      const keyed = hold && idempotent && { organizationId: principal.organizationId, ...idempotent.idempotencyKey };
      const response = await runItems(deps, call, items, keyed);
      if (hold) await keepAnswer(deps, hold, principal.organizationId, response);
      return response;
    },
  });
}

/**
 * Keyed, each charge also writes the item's row, so an item is charged once per key even when a
 * run died before storing its answer.
 */
async function runItems(deps: BatchDeps, call: TraceCall, items: readonly ListItemInput[], keyed?: KeyedList): Promise<BatchResponse> {
  const run: ListRun = {
    deps,
    principal: call.principal,
    list: { batchId: call.id, jobId: null },
    deadline: call.startedAt + deps.timeoutMs,
    order: chargeInIndexOrder(items.length),
    group: deps.traces.group(),
    // A keyed batch's items are refunded with its stored answer's carriers (keepAnswer).
    refundUndelivered: !keyed,
    chargedAlready: keyed && (await chargedItems<ItemResult>(deps.db, keyed)),
  };
  const alsoInCharge: AlsoInCharge | undefined =
    keyed && ((result) => ({ ctes: chargedItemCte(keyed, result.index, { requestId: result.id!, result }) }));
  const results = await runTraceItems(run, items, deps.concurrency, alsoInCharge);
  const account = await skipTraceAccount.read(deps.db, call.principal.organizationId);
  const charged = results.filter(isCharged).length;
  return { id: call.id, charged, results, creditsRemaining: account?.credits ?? 0, replayed: false };
}

const isCharged = (result: ItemResult) => result.status === 'records_found' || result.status === 'no_records_found';

/**
 * Refunds a lost response's items only if no replay carried the answer; an answer that could not be
 * stored (claim lost) has no other carrier, so its items are refunded at once.
 */
async function keepAnswer(deps: BatchDeps, hold: KeyHold, organizationId: string, response: BatchResponse): Promise<void> {
  const answer: StoredAnswer<BatchResponse> = { result: response };
  const stored = await storeOutcome(deps.db, hold.claim, answer, response.id);
  deps.client.onUndelivered(() => (stored ? loseCarrier(deps, organizationId, response) : refundItems(deps, organizationId, response)));
}

/** While another carrier remains, the charges stand. */
function loseCarrier(deps: BatchDeps, organizationId: string, answer: BatchResponse): void {
  loseBatchCarrier(deps.db, answer.id).then(
    (forgotten) => forgotten && refundItems(deps, organizationId, answer),
    (error) => deps.log.error({ err: error, requestId: answer.id }, 'could not reverse the charges of an undelivered batch'),
  );
}

/** Each at most once: the item row is deleted with its refund. */
function refundItems(deps: BatchDeps, organizationId: string, answer: BatchResponse): void {
  for (const item of answer.results.filter(isCharged)) refundNow(deps, { organizationId, requestId: item.id!, keyed: false });
}

/** Reading the answer counted this response as a carrier (readKeyForReplay), so losing it counts too. */
async function answerWithStored(deps: BatchDeps, call: TraceCall, answer: StoredAnswer<BatchResponse>): Promise<BatchResponse> {
  if ('error' in answer) throw replayedError(answer.error);
  const lost = () => loseCarrier(deps, call.principal.organizationId, answer.result);
  try {
    await recordOutcome(deps, { ...call, list: { batchId: answer.result.id, jobId: null, key: null } }, REPLAYED);
  } catch (error) {
    // This response will carry an error instead.
    lost();
    throw error;
  }
  deps.client.onUndelivered(lost);
  return { ...answer.result, replayed: true };
}
