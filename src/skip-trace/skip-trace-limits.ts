import type { Config } from '../infra/config.js';
import { createInFlightLimiter, type InFlightLimiter } from '../infra/in-flight.js';

/**
 * Traces in flight per skip trace key on this instance, shared by the REST route and the
 * `skipTrace` mutation on /graphql. (The key's requests-per-minute window is its rate window,
 * spent once per request by the HTTP layer: auth/rate-windows.ts.)
 */
export interface SkipTraceLimits {
  inFlight: InFlightLimiter;
}

export function createSkipTraceLimits(config: Config): SkipTraceLimits {
  return { inFlight: createInFlightLimiter(config.limits.skipTraceMaxInFlight) };
}

/**
 * One of the key's in-flight slots, held until `release()` or until the caller goes away
 * (`signal`), whichever comes first, and released exactly once. Null when the key is at its limit.
 */
export function takeInFlightSlot(limits: SkipTraceLimits, keyId: string, signal: AbortSignal): (() => void) | null {
  const release = limits.inFlight.tryAcquire(keyId);
  if (!release) return null;
  signal.addEventListener('abort', release, { once: true });
  if (signal.aborted) release();
  return () => {
    signal.removeEventListener('abort', release);
    release();
  };
}

export const concurrencyMessage = (max: number) => `More than ${max} traces in flight for this key; retry when one completes.`;
