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

  const decision = (remainingPoints: number, msBeforeNext: number, allowed: boolean): WindowDecision => ({
    allowed,
    limit: options.limit,
    remaining: Math.max(0, remainingPoints),
    resetAt: Math.ceil((Date.now() + msBeforeNext) / 1000),
    retryAfter: Math.max(1, Math.ceil(msBeforeNext / 1000)),
  });
  const consumeWith = async (rateLimiter: RateLimiterAbstract, key: string) => {
    try {
      const res = await rateLimiter.consume(key);
      return decision(res.remainingPoints, res.msBeforeNext, true);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return decision(rejection.remainingPoints, rejection.msBeforeNext, false);
      throw rejection;
    }
  };

  // With Redis, RateLimiterRedis's own window script, called directly: its consume wraps the call
  // in several promises and objects per request. Should Redis fail, the insurance limiter answers.
  const script = options.redis as unknown as WindowScript | null;
  const keyPrefix = `rl:${options.name}:`;
  const [points, duration, limit] = [String(1), String(WINDOW_SECONDS), String(options.limit)];
  const consumeOnRedis = async (key: string): Promise<WindowDecision> => {
    let result: [number, number];
    try {
      result = await script!.rlflxIncr([keyPrefix + key, points, duration, limit, duration]);
    } catch {
      return consumeWith(memory, key);
    }
    const consumed = Number(result[0]);
    return decision(options.limit - consumed, Number(result[1]), consumed <= options.limit);
  };

  return {
    limit: options.limit,
    consume: script && typeof script.rlflxIncr === 'function' ? consumeOnRedis : (key) => consumeWith(limiter, key),
    async delete(key) {
      await limiter.delete(key);
    },
  };
}

/** The window script (`rlflxIncr`) RateLimiterRedis defines on an ioredis client: the points consumed and the window's ms left. */
interface WindowScript {
  rlflxIncr(args: string[]): Promise<[number, number]>;
}
