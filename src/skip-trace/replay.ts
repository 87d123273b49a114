import { REPLAYED } from '../billing/audit.js';
import { replayedError, type StoredAnswer } from './idempotency/idempotent-request.js';
import { recordOutcome, type TraceCall } from './outcome.js';
import { refundIfUndelivered, refundNow } from './refund.js';
import type { SkipTraceResponse, SkipTraceDeps } from './skip-trace.service.js';

/** Reading the answer counted this response as a carrier, so its loss is reported as the first's would be. */
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
