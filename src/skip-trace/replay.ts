import { REPLAYED } from '../billing/audit.js';
import { replayedError, type StoredAnswer } from './idempotency/idempotent-request.js';
import { recordOutcome, type TraceCall } from './outcome.js';
import { refundIfUndelivered, refundNow } from './refund.js';
import type { SkipTraceResponse, SkipTraceDeps } from './skip-trace.service.js';

/**
 * Answers with a key's stored answer: a stored result is returned as it was (same id, same
 * balance and cache headers), a stored error thrown as it was (and audited as any error is);
 * nothing is charged, and the audit records the call as `replayed`. Reading a result counted this
 * response as one of its carriers: if it is not written in full either, that is reported as the
 * first request's loss is.
 */
export async function answerWithReplay(
  deps: SkipTraceDeps,
  call: TraceCall,
  answer: StoredAnswer<SkipTraceResponse>,
): Promise<SkipTraceResponse> {
  if ('error' in answer) throw replayedError(answer.error);
  const carried = { organizationId: call.principal.organizationId, requestId: answer.result.id, keyed: true };
  try {
    await recordOutcome(deps, call, REPLAYED);
  } catch (error) {
    // This response will carry an error instead.
    refundNow(deps, carried);
    throw error;
  }
  refundIfUndelivered(deps, carried);
  return { ...answer.result, replayed: true };
}
