import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Counter, type Registry } from 'prom-client';
import type { Config } from '../infra/config.js';
import { createWindowLimiter, type WindowDecision } from '../infra/rate-limit.js';
import type { Principal } from '../graphql/principal.js';

declare module '../graphql/context.js' {
  interface Services {
    /** Requests-per-minute windows, per credential (and per client IP without one). */
    rateWindows: RateWindows;
  }
}

export type Caller = Exclude<Principal, { type: 'anonymous' }>;

/**
 * The per-minute windows requests count against, one point per request, whatever the route:
 * a gateway key's requests (on /api/v1/call and /graphql alike) share its gateway window, a skip
 * trace key's share its skip trace window, the platform token has one of its own, and requests
 * without a valid credential count per client IP, which slows key guessing.
 */
export interface RateWindows {
  consumeFor(caller: Caller): Promise<WindowDecision>;
  consumeForClient(ip: string): Promise<WindowDecision>;
}

export function createRateWindows(
  limits: Config['limits'],
  internalApiToken: string | undefined,
  redis: Redis | null,
  registry: Registry,
): RateWindows {
  // `window` is one of the four below: bounded.
  const refusals = new Counter({
    name: 'crm_rate_limit_refusals_total',
    help: 'Requests refused by a requests-per-minute window (429 rate_limited), by window.',
    labelNames: ['window'] as const,
    registers: [registry],
  });
  const counted = (window: string, decision: Promise<WindowDecision>) =>
    decision.then((d) => {
      if (!d.allowed) refusals.inc({ window });
      return d;
    });
  // The platform window is the token's: a new token starts a new window (never the token itself in Redis).
  const platformKey = `platform:${createHash('sha256')
    .update(internalApiToken ?? '')
    .digest('hex')
    .slice(0, 16)}`;
  const gateway = createWindowLimiter({ name: 'gateway', limit: limits.gatewayPerMinute, redis });
  const skipTrace = createWindowLimiter({ name: 'skiptrace', limit: limits.skipTracePerMinute, redis });
  const platform = createWindowLimiter({ name: 'platform', limit: limits.platformPerMinute, redis });
  const clients = createWindowLimiter({ name: 'auth-failures', limit: limits.authFailuresPerMinute, redis });
  return {
    consumeFor(caller) {
      switch (caller.type) {
        case 'user':
          return counted('gateway', gateway.consume(`gateway:${caller.keyId}`));
        case 'organization':
          return counted('skip_trace', skipTrace.consume(`skiptrace:${caller.keyId}`));
        case 'platform':
          return counted('platform', platform.consume(platformKey));
      }
    },
    consumeForClient: (ip) => counted('client_ip', clients.consume(ip)),
  };
}
