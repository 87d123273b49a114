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

/** A trace's admission: one of its key's in-flight slots, released exactly once. */
export interface SkipTraceTicket {
  release(): void;
}

/**
 * Who may start a trace now, on this instance: at most `SKIPTRACE_MAX_IN_FLIGHT` traces per skip
 * trace key. The key's requests-per-minute window is spent once per request by the HTTP layer
 * (http/credential-guard.ts), whatever the route, so admission here is the in-flight slot.
 *
 * Both routes admit through `admit`: REST before the body is read (a body that never arrives
 * still holds its slot until the body timeout ends it), `/graphql` in the resolver. A request
 * holds at most one ticket: asking again in the same request (the REST route runs the mutation)
 * returns the ticket it holds.
 */
export interface SkipTraceAdmission {
  /** The request's ticket, released when its response is done or its caller goes away; `concurrency_limit` when the key has none free. */
  admit(keyId: string, client: ClientWatch): SkipTraceTicket;
}

export function createSkipTraceAdmission(config: Pick<Config['limits'], 'skipTraceMaxInFlight'>, registry: Registry): SkipTraceAdmission {
  const inFlight = createInFlightLimiter(config.skipTraceMaxInFlight);
  const refused = concurrencyRefusals(registry, 'skip_trace_in_flight');
  // Keyed by the request's client watch: an entry lives as long as its request.
  const held = new WeakMap<ClientWatch, SkipTraceTicket>();
  return {
    admit(keyId, client) {
      const existing = held.get(client);
      if (existing) return existing;
      const release = inFlight.tryAcquire(keyId);
      if (!release) {
        refused();
        throw new AppError('concurrency_limit', `More than ${inFlight.max} traces in flight for this key; retry when one completes.`);
      }
      const ticket = { release };
      held.set(client, ticket);
      // Whichever comes first; `release` is idempotent.
      client.signal.addEventListener('abort', release, { once: true });
      if (client.signal.aborted) release();
      client.onDone(() => {
        client.signal.removeEventListener('abort', release);
        release();
      });
      return ticket;
    },
  };
}
