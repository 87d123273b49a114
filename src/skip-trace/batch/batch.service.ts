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
import { forgetOutcome, storeOutcome } from '../idempotency/idempotency-keys.data.js';
import { replayedError, type IdempotentCall, type KeyHold, type StoredAnswer } from '../idempotency/idempotent-request.js';
import { recordOutcome, type TraceCall } from '../outcome.js';
import { runKeyedRequest, type SkipTraceDeps } from '../skip-trace.service.js';
import { chargeInIndexOrder } from '../items/charge-order.js';
import type { ItemResult } from '../items/item-result.js';
import { checkListShape, type ListItemInput } from '../items/item-rules.js';
import { runTraceItems, type AlsoInCharge, type ListRun } from '../items/run-item.js';
import { chargedItemCte, chargedItems, type KeyedList } from '../idempotency/keyed-items.data.js';

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
      if (hold) await keepAnswer(deps, hold, response);
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
    refundUndelivered: true,
    chargedAlready: keyed && (await chargedItems<ItemResult>(deps.db, keyed)),
  };
  const alsoInCharge: AlsoInCharge | undefined =
    keyed && ((result) => ({ ctes: chargedItemCte(keyed, result.index, { requestId: result.id!, result }) }));
  const results = await runTraceItems(run, items, deps.concurrency, alsoInCharge);
  const account = await skipTraceAccount.read(deps.db, call.principal.organizationId);
  const charged = results.filter((result) => result.status === 'records_found' || result.status === 'no_records_found').length;
  return { id: call.id, charged, results, creditsRemaining: account?.credits ?? 0, replayed: false };
}

/**
 * Stores the batch's answer for its key's replays. Its items' charges are reversed if this
 * response is not delivered (refundUndelivered), and the answer is then forgotten with them, so
 * the key's retry runs anew rather than replaying results nobody paid for.
 */
async function keepAnswer(deps: BatchDeps, hold: KeyHold, response: BatchResponse): Promise<void> {
  const answer: StoredAnswer<BatchResponse> = { result: response };
  if (!(await storeOutcome(deps.db, hold.claim, answer))) return;
  deps.client.onUndelivered(() => {
    forgetOutcome(deps.db, hold.claim).catch((error) => deps.log.error({ err: error }, 'could not forget an undelivered batch answer'));
  });
}

/** A key's stored answer: its result replayed (nothing charged, audited `replayed`), or its error thrown again. */
async function answerWithStored(deps: BatchDeps, call: TraceCall, answer: StoredAnswer<BatchResponse>): Promise<BatchResponse> {
  if ('error' in answer) throw replayedError(answer.error);
  await recordOutcome(deps, { ...call, list: { batchId: answer.result.id, jobId: null, key: null } }, REPLAYED);
  return { ...answer.result, replayed: true };
}
