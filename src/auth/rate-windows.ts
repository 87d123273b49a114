import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Counter, type Registry } from 'prom-client';
import type { Config } from '../infra/config.js';
import { createWindowLimiter, type WindowDecision } from '../infra/rate-limit.js';
import { labelSets, startAtZero } from '../infra/metric-series.js';
import type { Caller } from '../schema/principal.js';

declare module '../schema/context.js' {
  interface Services {
    /** Requests-per-minute windows, per credential (and per client IP without one). */
    rateWindows: RateWindows;
  }
}

/**
 * The per-minute windows requests count against, one point per request, whatever the route:
 * a gateway key's requests (on /api/v1/call and /graphql alike) share its gateway window, a skip
 * trace key's share its skip trace window, the platform token has one of its own, and requests
 * without a valid credential count per client IP, which slows key guessing.
 */
export interface RateWindows {
  consumeFor(caller: Caller): Promise<WindowDecision>;
  /**
   * A point of the window of the gateway key with this hash (the one `consumeFor` spends for its
   * principal), before the key is looked up: so the window runs concurrently with the lookup.
   */
  consumeForGatewayKeyHash(keyHash: string): Promise<WindowDecision>;
  /**
   * Deletes the window of a hash that turned out to be no active key's, which the request spent a
   * point of before it knew: a caller sending made-up or revoked keys grows nothing, since each
   * window it creates is deleted once its lookup is back (the caller's client IP window counts it).
   */
  forgetGatewayKeyHash(keyHash: string): Promise<void>;
  consumeForClient(ip: string): Promise<WindowDecision>;
}

/** The windows, as the refusals counter labels them. */
const WINDOWS = ['gateway', 'skip_trace', 'platform', 'client_ip'] as const;
type WindowName = (typeof WINDOWS)[number];

/** A gateway key's window, by its hash: known before the lookup, one per key (128 bits of it are plenty). */
const gatewayWindow = (keyHash: string) => `gateway:${keyHash.slice(0, 32)}`;

export function createRateWindows(
  limits: Config['limits'],
  internalApiToken: string | undefined,
  redis: Redis | null,
  registry: Registry,
): RateWindows {
  // `window` is one of WINDOWS: bounded.
  const refusals = startAtZero(
    new Counter({
      name: 'crm_rate_limit_refusals_total',
      help: 'Requests refused by a requests-per-minute window (429 rate_limited), by window.',
      labelNames: ['window'] as const,
      registers: [registry],
    }),
    labelSets({ window: WINDOWS }),
  );
  const counted = (window: WindowName, decision: Promise<WindowDecision>) =>
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
          return counted('gateway', gateway.consume(gatewayWindow(caller.keyHash)));
        case 'organization':
          return counted('skip_trace', skipTrace.consume(`skiptrace:${caller.keyId}`));
        case 'platform':
          return counted('platform', platform.consume(platformKey));
      }
    },
    consumeForGatewayKeyHash: (keyHash) => counted('gateway', gateway.consume(gatewayWindow(keyHash))),
    forgetGatewayKeyHash: (keyHash) => gateway.delete(gatewayWindow(keyHash)),
    consumeForClient: (ip) => counted('client_ip', clients.consume(ip)),
  };
}
