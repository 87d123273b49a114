import type { Registry } from 'prom-client';
import { AppError } from '../common/errors.js';
import type { Config } from '../infra/config.js';
import type { ClientWatch } from '../infra/client-watch.js';
import { concurrencyRefusals, createInFlightLimiter } from '../infra/in-flight.js';

declare module '../schema/context.js' {
  interface Services {
    skipTraceAdmission: SkipTraceAdmission;
  }
}

/**
 * The in-flight slots of skip traces on this instance: at most `SKIPTRACE_MAX_IN_FLIGHT` per skip
 * trace key. (The key's requests-per-minute window is spent by the HTTP layer, once per request.)
 * This is the one place a slot is taken and released.
 */
export interface SkipTraceAdmission {
  /**
   * Holds one of the key's slots for the request `client` watches, until its response is done or
   * its caller leaves; `concurrency_limit` when the key has none free. Called once per request:
   * by the REST route's `holdSlot` hook, before the body is read (a body that never arrives holds it
   * until the body timeout), which tells the operation so (`slotHeld`); on `/graphql` by the trace.
   */
  holdSlot(keyId: string, client: ClientWatch): void;
}

export function createSkipTraceAdmission(config: Pick<Config['limits'], 'skipTraceMaxInFlight'>, registry: Registry): SkipTraceAdmission {
  const inFlight = createInFlightLimiter(config.skipTraceMaxInFlight);
  const refused = concurrencyRefusals(registry, 'skip_trace_in_flight');
  return {
    holdSlot(keyId, client) {
      const release = inFlight.tryAcquire(keyId);
      if (!release) {
        refused();
        throw new AppError('concurrency_limit', `More than ${inFlight.max} traces in flight for this key; retry when one completes.`);
      }
      // Whichever comes first; `release` is idempotent.
      client.signal.addEventListener('abort', release, { once: true });
      if (client.signal.aborted) release();
      client.onDone(() => {
        client.signal.removeEventListener('abort', release);
        release();
      });
    },
  };
}
