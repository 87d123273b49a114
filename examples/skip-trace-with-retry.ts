/**
 * One skip trace, retried the way the API asks:
 * - 429 (`rate_limited`, `concurrency_limit`): wait `Retry-After` seconds, then retry;
 * - 504 (`timeout`): the trace goes on in the background and caches its result, so a retry a
 *   little later returns it (a 504 is never charged; the 200 costs one credit).
 * Every attempt sends the same `Idempotency-Key`, so a retry after a lost response is not charged twice.
 * Other errors (401, 402, 403, 422, 500) are not retried.
 *
 *   API_URL=http://localhost:4000 SKIPTRACE_KEY=stk_… npx tsx examples/skip-trace-with-retry.ts
 *
 * The address is the demo seed's, unless ADDRESS_JSON gives another (`{"line1", "city", "state", "zip"}`).
 */
import { randomUUID } from 'node:crypto';
import { ApiError, optionsFromEnv, skipTraceClient, type SkipTraceInput } from './client/api-client.js';

const MAX_ATTEMPTS = Number(process.env.MAX_ATTEMPTS ?? 6);
/** First wait after a 504, doubled after each further one. */
const TIMEOUT_BACKOFF_MS = Number(process.env.TIMEOUT_BACKOFF_MS ?? 1000);

const skipTrace = skipTraceClient(optionsFromEnv('SKIPTRACE_KEY'));
const input: SkipTraceInput = {
  address: process.env.ADDRESS_JSON
    ? JSON.parse(process.env.ADDRESS_JSON)
    : { line1: '123 Main Street Apt 4', city: 'Austin', state: 'tx', zip: '78701' },
};
const idempotencyKey = randomUUID();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let timeoutBackoffMs = TIMEOUT_BACKOFF_MS;
for (let attempt = 1; ; attempt++) {
  try {
    const result = await skipTrace.trace(input, { 'idempotency-key': idempotencyKey });
    console.log(`attempt ${attempt}: 200 ${result.status}, ${result.persons.length} persons (trace ${result.id})`);
    console.log(JSON.stringify(result, null, 2));
    break;
  } catch (error) {
    if (!(error instanceof ApiError) || attempt >= MAX_ATTEMPTS) throw error;
    if (error.status === 429) {
      const waitMs = (error.retryAfterSeconds ?? 1) * 1000;
      console.log(`attempt ${attempt}: 429 ${error.code}; retrying after Retry-After: ${waitMs / 1000} s`);
      await sleep(waitMs);
    } else if (error.status === 504) {
      console.log(`attempt ${attempt}: 504 ${error.code}; the trace goes on, retrying in ${timeoutBackoffMs} ms`);
      await sleep(timeoutBackoffMs);
      timeoutBackoffMs *= 2;
    } else {
      throw error;
    }
  }
}
