/**
 * The principals of presented keys, kept between requests and trusted only while a version that
 * every change to keys or roles replaces is unchanged: each request reads the version (from Redis,
 * alongside its rate window), so a revocation through the API takes effect on every instance at the
 * next request. Without Redis only an embedded database (one process) keeps principals; a
 * PostgreSQL without Redis looks every key up, since other instances could not be told.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { AppError } from '../common/errors.js';
import type { Caller } from '../schema/principal.js';

declare module '../schema/context.js' {
  interface Services {
    principals: PrincipalCache;
  }
}

export interface PrincipalCache {
  /** The principal of a key's hash: the kept one while the version is unchanged, else `lookup()`'s. */
  principalOf(keyHash: string, lookup: () => Promise<Caller | null>): Promise<Caller | null>;
  /** Runs a write to keys or roles, then replaces the version, so no instance trusts what it kept. */
  changing<T>(write: () => Promise<T>): Promise<T>;
}

/** Where the version lives: read per request, replaced after each committed change. */
export interface PrincipalVersion {
  /** The version now; null when it cannot be known (nothing is then kept or trusted). */
  read(): Promise<string | null>;
  replace(): Promise<void>;
}

interface Kept {
  principal: Caller;
  version: string;
}

const VERSION_KEY = 'auth:principals-version';

/** Shared through Redis. A missing version (a fresh or flushed Redis) is set anew, never to one seen before. */
export function redisPrincipalVersion(redis: Redis, log: Logger, key = VERSION_KEY): PrincipalVersion {
  return {
    read: () =>
      redis.get(key).then(
        (version) => {
          if (version === null) redis.set(key, randomUUID(), 'NX').catch(() => undefined);
          return version;
        },
        () => null,
      ),
    async replace() {
      for (let attempt = 1; ; attempt++) {
        try {
          await redis.set(key, randomUUID());
          return;
        } catch (error) {
          // The change is committed; kept principals elsewhere then expire by age (PRINCIPAL_CACHE_MAX_AGE_MS).
          if (attempt === 3) return log.error({ err: error }, 'could not replace the principals version in Redis');
        }
      }
    },
  };
}

/** One process's own version: for the embedded database, which no other process opens. */
export function localPrincipalVersion(): PrincipalVersion {
  let version = randomUUID();
  return {
    read: async () => version,
    async replace() {
      version = randomUUID();
    },
  };
}

/**
 * A kept principal is stamped with a version read before its lookup was sent, so a change committed
 * after that read, and the version replaced after it, can never be hidden behind the stamp.
 */
export function createPrincipalCache(options: { version: PrincipalVersion | null; maxEntries: number; maxAgeMs: number }): PrincipalCache {
  const { version } = options;
  if (!version || options.maxEntries === 0) {
    return { principalOf: (_keyHash, lookup) => lookup(), changing: (write) => write() };
  }
  const kept = new LRUCache<string, Kept>({ max: options.maxEntries, ttl: options.maxAgeMs });
  // The version of the latest read that has answered: any lookup sent from now on sees what it saw.
  let lastRead: string | null = null;
  const readVersion = () =>
    version.read().then((read) => {
      lastRead = read;
      return read;
    });

  async function lookUpAndKeep(keyHash: string, stamp: string | null, lookup: () => Promise<Caller | null>) {
    const principal = await lookup();
    if (principal && stamp !== null) kept.set(keyHash, { principal, version: stamp });
    else kept.delete(keyHash);
    return principal;
  }

  return {
    async principalOf(keyHash, lookup) {
      const found = kept.get(keyHash);
      const reading = readVersion();
      // A version read earlier stamps this lookup; before any (a cold start), this request's own read.
      if (!found) return lookUpAndKeep(keyHash, lastRead ?? (await reading), lookup);
      const now = await reading;
      if (now !== null && now === found.version) return found.principal;
      return lookUpAndKeep(keyHash, now, lookup);
    },
    async changing(write) {
      let result;
      try {
        result = await write();
      } catch (error) {
        // A refusal (an AppError) wrote nothing, so callers cannot empty every cache by asking for what is not there.
        if (!(error instanceof AppError)) await version.replace();
        throw error;
      }
      await version.replace();
      return result;
    },
  };
}
