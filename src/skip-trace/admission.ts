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

/** The one place a slot is taken and released; the key's rate window is the HTTP layer's. */
export interface SkipTraceAdmission {
  /**
   * Once per request: REST takes it before the body is read (so a body that never arrives holds it
   * until the body timeout), `/graphql` in the trace.
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
