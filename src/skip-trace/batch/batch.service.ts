/**
 * A synchronous batch (`skipTraceBatch`, `POST /api/v1/skiptrace/batch`): up to BATCH_MAX_ITEMS
 * items, each run through the single trace (items/run-item.ts), answered together in request
 * order. The batch as a whole takes one in-flight slot, is refused as a single call is (403, 402
 * when the balance is zero at its start), and carries one Idempotency-Key for all its items.
 */
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

/** The items of one synchronous batch, at most. */
export const BATCH_MAX_ITEMS = 100;

export interface BatchResponse {
  /** A new UUID per batch; its items' usage rows name it. */
  id: string;
  /** Credits charged: its items with records_found or no_records_found. */
  charged: number;
  /** One per item, in request order. */
  results: ItemResult[];
  /** The organization's balance once the batch's charges were made. */
  creditsRemaining: number;
  /** Whether this is the stored answer of an earlier request with the same Idempotency-Key. */
  replayed: boolean;
}

/** What a batch runs on: a trace's dependencies, and how many of its items run at once. */
export interface BatchDeps extends SkipTraceDeps {
  concurrency: number;
}

/**
 * Runs a batch: its slot, its shape (for `/graphql` callers; the REST route checked it already),
 * its Idempotency-Key, the account (403, 402), then every item, at most `concurrency` at a time,
 * each failing `timeout` once the trace timeout has passed since the batch began.
 */
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
 * Runs the batch's items. Keyed, each item's charge also writes its row under (key, body, index)
 * (idempotency/keyed-items.data.ts), so an item is charged once per key: a retry after a run
 * that died before storing its answer answers the items it charged with their results.
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
 * Stores the batch's answer for its key's replays, with this response as its first carrier (a
 * replay is one more). Should this response not be delivered, its items' charges are reversed
 * only if no replay delivered the answer (loseCarrier); if the answer could not be stored (the
 * claim was lost), nothing else carries them and they are reversed at once.
 */
async function keepAnswer(deps: BatchDeps, hold: KeyHold, organizationId: string, response: BatchResponse): Promise<void> {
  const answer: StoredAnswer<BatchResponse> = { result: response };
  const stored = await storeOutcome(deps.db, hold.claim, answer, response.id);
  deps.client.onUndelivered(() => (stored ? loseCarrier(deps, organizationId, response) : refundItems(deps, organizationId, response)));
}

/**
 * A lost response carrying the stored `answer`: the last one forgets it (the key's next request
 * runs anew) and refunds its items; while another carrier remains, the charges stand.
 */
function loseCarrier(deps: BatchDeps, organizationId: string, answer: BatchResponse): void {
  loseBatchCarrier(deps.db, answer.id).then(
    (forgotten) => forgotten && refundItems(deps, organizationId, answer),
    (error) => deps.log.error({ err: error, requestId: answer.id }, 'could not reverse the charges of an undelivered batch'),
  );
}

/** Reverses the charges of the answer's items (each at most once; its item row deleted with it). */
function refundItems(deps: BatchDeps, organizationId: string, answer: BatchResponse): void {
  for (const item of answer.results.filter(isCharged)) refundNow(deps, { organizationId, requestId: item.id!, keyed: false });
}

/**
 * A key's stored answer: its result replayed (nothing charged, audited `replayed`), or its error
 * thrown again. Reading a result counted this response as one of its carriers (readKeyForReplay):
 * if it is not written in full either, it is lost as the first response's is.
 */
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
