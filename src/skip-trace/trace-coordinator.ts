import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Db } from '../infra/database/sql.js';
import { AppError } from '../common/errors.js';
import { resultCache } from './result-cache.js';
import {
  UnresolvableAddressError,
  type SkipTraceProvider,
  type TraceGroup,
  type TraceRequest,
  type TraceResult,
} from './providers/provider.js';
import type { SkipTraceMetrics } from './skip-trace.metrics.js';
import type { ValidTrace } from './trace-input.js';

declare module '../schema/context.js' {
  interface Services {
    traces: TraceCoordinator;
  }
}

export interface ResolveOptions {
  /** The caller's deadline only: the trace itself runs on past it and caches its result. */
  timeoutMs?: number;
  group?: TraceGroup;
}

export interface ResolvedTrace {
  result: TraceResult;
  cacheHit: boolean;
}

interface CoordinatorOptions {
  sql: Db;
  redis: Redis | null;
  provider: SkipTraceProvider;
  log: Logger;
  timeoutMs: number;
  ttlDays: number;
  metrics: SkipTraceMetrics;
}

const POLL_MS = 50;
const RELEASE_LOCK = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * One provider call per cache key at a time, in this process and across instances (a Redis lock).
 * A trace outliving the timeout still caches its result, so the caller's retry finds it.
 */
export function createTraceCoordinator(options: CoordinatorOptions) {
  const inFlight = new Map<string, Promise<ResolvedTrace>>();
  const shared = (cacheKey: string, request: TraceRequest, group: TraceGroup | undefined) => {
    let trace = inFlight.get(cacheKey);
    if (!trace) {
      trace = traceAcrossInstances(options, cacheKey, request, group).finally(() => inFlight.delete(cacheKey));
      // The trace may outlive every caller (timeout): its failure must not become an unhandled rejection.
      trace.catch((error) => options.log.debug({ err: error }, 'background trace failed'));
      inFlight.set(cacheKey, trace);
    }
    return trace;
  };
  return {
    async resolve(trace: ValidTrace, requestId: string, cached: TraceResult | null, how: ResolveOptions = {}): Promise<ResolvedTrace> {
      options.metrics.cacheLookups.inc({ result: cached ? 'hit' : 'miss' });
      if (cached) return { result: cached, cacheHit: true };
      const request = { requestId, address: trace.address, actor: trace.actor };
      try {
        return await withinTimeout(shared(trace.cacheKey, request, how.group), how.timeoutMs ?? options.timeoutMs);
      } catch (error) {
        if (error instanceof UnresolvableAddressError)
          throw new AppError('invalid_request', 'The address could not be resolved.', [
            { path: 'address', message: 'could not be resolved to a property' },
          ]);
        throw error;
      }
    },
    group: (): TraceGroup | undefined => options.provider.group?.(),
    pending: () => [...inFlight.values()],
  };
}

export type TraceCoordinator = ReturnType<typeof createTraceCoordinator>;

export const traceTimedOut = (timeoutMs: number) =>
  new AppError('timeout', `The trace did not complete within ${Math.round(timeoutMs / 1000)} s; retry to get its result.`);

async function withinTimeout<T>(trace: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(traceTimedOut(timeoutMs)), timeoutMs);
  });
  try {
    return await Promise.race([trace, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function traceWithProvider(
  options: CoordinatorOptions,
  cacheKey: string,
  request: TraceRequest,
  group: TraceGroup | undefined,
): Promise<ResolvedTrace> {
  const { provider, metrics } = options;
  const stopTimer = metrics.providerDuration.startTimer({ provider: provider.name });
  let result: TraceResult;
  try {
    result = await (group ?? provider).trace(request);
  } catch (error) {
    const reason = error instanceof UnresolvableAddressError ? 'unresolvable' : 'failure';
    metrics.providerErrors.inc({ provider: provider.name, reason });
    throw error;
  } finally {
    stopTimer();
  }
  await resultCache.write(options.sql, cacheKey, result, provider.name, options.ttlDays);
  return { result, cacheHit: false };
}

/** A waiter whose lock owner's liveness key is gone (the instance died) takes the lock over rather than wait out its TTL. */
const ALIVE_MS = 10_000;
const aliveKey = (instance: string) => `skiptrace:instance:${instance}`;

function liveness(redis: Redis) {
  const instance = randomUUID();
  let held = 0;
  let timer: NodeJS.Timeout | undefined;
  const renew = () => redis.set(aliveKey(instance), '1', 'PX', ALIVE_MS).catch(() => undefined);
  return {
    instance,
    async hold() {
      if (held++ === 0) timer = setInterval(renew, ALIVE_MS / 3).unref();
      await renew();
    },
    release() {
      if (--held === 0) clearInterval(timer);
    },
  };
}
type Liveness = ReturnType<typeof liveness>;
const livenessOf = new WeakMap<Redis, Liveness>();

async function traceAcrossInstances(
  options: CoordinatorOptions,
  cacheKey: string,
  request: TraceRequest,
  group: TraceGroup | undefined,
): Promise<ResolvedTrace> {
  const { redis, sql: db } = options;
  if (!redis) return traceWithProvider(options, cacheKey, request, group);
  const lockKey = `lock:skiptrace:${cacheKey}`;
  const alive = livenessOf.get(redis) ?? livenessOf.set(redis, liveness(redis)).get(redis)!;
  const token = `${alive.instance}/${randomUUID()}`;
  for (;;) {
    let acquired: string | null;
    try {
      await alive.hold();
      acquired = await redis.set(lockKey, token, 'PX', Math.max(60_000, options.timeoutMs * 4), 'NX');
      if (!acquired) alive.release();
    } catch (error) {
      alive.release();
      // Redis down: fall back to this instance's own single flight rather than failing the trace.
      options.log.warn({ err: error }, 'redis unavailable for the trace lock; tracing without cross-instance single flight');
      return traceWithProvider(options, cacheKey, request, group);
    }
    if (acquired) {
      try {
        const cached = await resultCache.read(db, cacheKey);
        return cached ? { result: cached, cacheHit: true } : await traceWithProvider(options, cacheKey, request, group);
      } finally {
        await redis.eval(RELEASE_LOCK, 1, lockKey, token).catch(() => undefined);
        alive.release();
      }
    }
    const cached = await cachedOnceUnlocked(redis, db, lockKey, cacheKey);
    if (cached) return { result: cached, cacheHit: true };
  }
}

/** Null once the lock is gone without a result, or its owner is no longer alive. */
async function cachedOnceUnlocked(redis: Redis, db: Db, lockKey: string, cacheKey: string): Promise<TraceResult | null> {
  for (;;) {
    const holder = await redis.get(lockKey).catch(() => null);
    if (holder === null) break;
    const owner = holder.includes('/') ? holder.slice(0, holder.indexOf('/')) : null;
    if (owner && (await redis.exists(aliveKey(owner)).catch(() => 1)) === 0) {
      await redis.eval(RELEASE_LOCK, 1, lockKey, holder).catch(() => undefined);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const cached = await resultCache.read(db, cacheKey);
    if (cached) return cached;
  }
  return resultCache.read(db, cacheKey);
}
