import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

export interface WindowDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds at which the current window ends. */
  resetAt: number;
  /** Whole seconds to wait; meaningful when not allowed. */
  retryAfter: number;
}

export interface WindowLimiter {
  readonly limit: number;
  consume(key: string): Promise<WindowDecision>;
  /** Deletes a key's window (as if it had never been spent). */
  delete(key: string): Promise<void>;
}

const WINDOW_SECONDS = 60;

/**
 * A fixed one-minute window per key. With Redis the window is shared by every instance; should
 * Redis fail, an in-process window takes over (rate-limiter-flexible's insurance limiter) so
 * callers see limits rather than errors.
 */
export function createWindowLimiter(options: { name: string; limit: number; redis: Redis | null }): WindowLimiter {
  const memory = new RateLimiterMemory({ keyPrefix: options.name, points: options.limit, duration: WINDOW_SECONDS });
  const limiter: RateLimiterAbstract = options.redis
    ? new RateLimiterRedis({
        storeClient: options.redis,
        keyPrefix: `rl:${options.name}`,
        points: options.limit,
        duration: WINDOW_SECONDS,
        insuranceLimiter: memory,
      })
    : memory;

  const decision = (res: RateLimiterRes, allowed: boolean): WindowDecision => ({
    allowed,
    limit: options.limit,
    remaining: Math.max(0, res.remainingPoints),
    resetAt: Math.ceil((Date.now() + res.msBeforeNext) / 1000),
    retryAfter: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
  });

  return {
    limit: options.limit,
    async consume(key) {
      try {
        return decision(await limiter.consume(key), true);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return decision(rejection, false);
        throw rejection;
      }
    },
    async delete(key) {
      await limiter.delete(key);
    },
  };
}
