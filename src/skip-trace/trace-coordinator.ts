import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Sql } from '../infra/database/sql.js';
import { AppError } from '../common/errors.js';
import { resultCache } from './result-cache.js';
import { UnresolvableAddressError, type SkipTraceProvider, type TraceRequest, type TraceResult } from './providers/provider.js';
import type { SkipTraceMetrics } from './skip-trace.metrics.js';

declare module '../schema/context.js' {
  interface Services {
    traces: TraceCoordinator;
  }
}

export interface ResolvedTrace {
  result: TraceResult;
  cacheHit: boolean;
}

const POLL_MS = 50;
const RELEASE_LOCK = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * Gets a trace result from the cache or the provider, with one provider call per cache key at a
 * time: concurrent identical traces in this process share one promise, and across instances a
 * Redis lock elects one caller while the others wait for its cached result. A trace that outlives
 * the timeout keeps running and caches its result, so the caller's retry finds it.
 */
export function createTraceCoordinator(options: {
  sql: Sql;
  redis: Redis | null;
  provider: SkipTraceProvider;
  log: Logger;
  timeoutMs: number;
  ttlDays: number;
  metrics: SkipTraceMetrics;
}) {
  const { sql, redis, provider, log, metrics } = options;
  const inFlight = new Map<string, Promise<ResolvedTrace>>();
  const lockTtlMs = Math.max(60_000, options.timeoutMs * 4);

  async function callProviderAndCache(cacheKey: string, request: TraceRequest): Promise<ResolvedTrace> {
    const stopTimer = metrics.providerDuration.startTimer({ provider: provider.name });
    let result: TraceResult;
    try {
      result = await provider.trace(request);
    } catch (error) {
      const reason = error instanceof UnresolvableAddressError ? 'unresolvable' : 'failure';
      metrics.providerErrors.inc({ provider: provider.name, reason });
      throw error;
    } finally {
      stopTimer();
    }
    await resultCache.write(sql, cacheKey, result, provider.name, options.ttlDays);
    return { result, cacheHit: false };
  }

  /** Cross-instance single flight: whoever holds the lock calls the provider; the rest poll the cache. */
  async function resolveShared(cacheKey: string, request: TraceRequest): Promise<ResolvedTrace> {
    if (!redis) return callProviderAndCache(cacheKey, request);
    const lockKey = `lock:skiptrace:${cacheKey}`;
    const token = randomUUID();
    for (;;) {
      let acquired: string | null;
      try {
        acquired = await redis.set(lockKey, token, 'PX', lockTtlMs, 'NX');
      } catch (error) {
        // Redis down: fall back to this instance's own single flight rather than failing the trace.
        log.warn({ err: error }, 'redis unavailable for the trace lock; tracing without cross-instance single flight');
        return callProviderAndCache(cacheKey, request);
      }
      if (acquired) {
        try {
          const cached = await resultCache.read(sql, cacheKey);
          return cached ? { result: cached, cacheHit: true } : await callProviderAndCache(cacheKey, request);
        } finally {
          await redis.eval(RELEASE_LOCK, 1, lockKey, token).catch(() => undefined);
        }
      }
      // Another instance is tracing this key: wait for its result, or for its lock to go.
      while ((await redis.exists(lockKey).catch(() => 0)) === 1) {
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        const cached = await resultCache.read(sql, cacheKey);
        if (cached) return { result: cached, cacheHit: true };
      }
      const cached = await resultCache.read(sql, cacheKey);
      if (cached) return { result: cached, cacheHit: true };
    }
  }

  return {
    /**
     * The result of `cacheKey`: `cached`, what the caller's opening read found in the cache
     * (trace.data.ts), else the provider's, shared with concurrent identical traces.
     */
    async resolve(cacheKey: string, request: TraceRequest, cached: TraceResult | null): Promise<ResolvedTrace> {
      metrics.cacheLookups.inc({ result: cached ? 'hit' : 'miss' });
      if (cached) return { result: cached, cacheHit: true };

      let shared = inFlight.get(cacheKey);
      if (!shared) {
        shared = resolveShared(cacheKey, request).finally(() => inFlight.delete(cacheKey));
        // The trace may outlive every caller (timeout): its failure must not become an unhandled rejection.
        shared.catch((error) => log.debug({ err: error }, 'background trace failed'));
        inFlight.set(cacheKey, shared);
      }

      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new AppError(
                'timeout',
                `The trace did not complete within ${Math.round(options.timeoutMs / 1000)} s; retry to get its result.`,
              ),
            ),
          options.timeoutMs,
        );
      });
      try {
        return await Promise.race([shared, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    /** In-flight traces, for a graceful drain. */
    pending: () => [...inFlight.values()],
  };
}

export type TraceCoordinator = ReturnType<typeof createTraceCoordinator>;
