import type { Redis } from 'ioredis';
import type { Config } from '../infra/config.js';
import { createInFlightLimiter, type InFlightLimiter } from '../infra/in-flight.js';
import { createWindowLimiter, type WindowLimiter } from '../infra/rate-limit.js';
import { AppError } from '../graphql/errors.js';
import type { OrganizationPrincipal } from '../auth/principal.js';

/** Per-key limits of skip trace, shared by the REST route and the `skipTrace` mutation on /graphql. */
export interface SkipTraceLimits {
  /** Requests per minute per key, across instances when Redis is configured. */
  window: WindowLimiter;
  /** Traces in flight per key on this instance. */
  inFlight: InFlightLimiter;
}

export const skipTraceWindowKey = (keyId: string) => `skiptrace:${keyId}`;

export function createSkipTraceLimits(config: Config, redis: Redis | null): SkipTraceLimits {
  return {
    window: createWindowLimiter({ name: 'skiptrace', limit: config.limits.skipTracePerMinute, redis }),
    inFlight: createInFlightLimiter(config.limits.skipTraceMaxInFlight),
  };
}

/**
 * Admission for a `skipTrace` call that did not come through the REST route (which admits in
 * contract order before reading the body): one window point and one in-flight slot.
 */
export async function admitSkipTrace(limits: SkipTraceLimits, principal: OrganizationPrincipal): Promise<() => void> {
  const decision = await limits.window.consume(skipTraceWindowKey(principal.keyId));
  if (!decision.allowed) throw new AppError('RATE_LIMITED', `Rate limit of ${decision.limit} skip traces per minute exceeded; retry after ${decision.retryAfter} s.`);
  const release = limits.inFlight.tryAcquire(principal.keyId);
  if (!release) throw new AppError('RATE_LIMITED', `More than ${limits.inFlight.max} traces in flight for this key; retry when one completes.`);
  return release;
}
