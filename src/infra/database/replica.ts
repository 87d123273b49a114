import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { startPeriodic } from '../periodic.js';
import { redisScript } from '../redis-script.js';
import { createReplicaMetrics, type FallbackReason, type ReplicaMetrics } from './replica.metrics.js';
import { poolDb, sql, type Db, type Statement } from './sql.js';

/**
 * Replica reads with read-your-writes: a user reads from the replica only once it has replayed past
 * their last write's WAL position. Callers never see its errors (docs/scaling.md, "The read replica").
 */
export interface ReplicaReads {
  /** Every statement goes where the request's first went, so a page and its totals agree. */
  readsFor(userId: string): Db;
  /** Await after the write commits and before answering, so the users' next reads see it. */
  wrote(userIds: Iterable<string>): Promise<void>;
  close(): Promise<void>;
}

export interface ReplicaOptions {
  url: string;
  poolMax: number;
  timeoutMs: number;
  preparedStatements: boolean;
}

const REPLAY_POLL_MS = 10;
/** Past it, a replica lagging more may serve the user an older state. */
const WRITTEN_TTL_MS = 60_000;
/** No replica reaches it: the user reads from the primary until the entry expires. */
const UNKNOWN_POSITION = Number.MAX_SAFE_INTEGER;
const LOCAL_ENTRIES_MAX = 100_000;

/** Keeps the larger position: writes may be recorded out of order. */
const SET_MAX_SCRIPT = `local cur = tonumber(redis.call('get', KEYS[1]) or '-1')
if tonumber(ARGV[1]) > cur then redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2]) end`;

const writtenKey = (userId: string) => `replica:written:${userId}`;

/** Positions are WAL bytes from 0/0. */
interface WrittenPositions {
  record(userIds: string[], position: number): Promise<void>;
  /** True when that cannot be known, so the read goes to the primary. */
  ahead(userId: string, replayed: number): boolean | Promise<boolean>;
}

function localPositions(): WrittenPositions & { ahead(userId: string, replayed: number): boolean } {
  const local = new Map<string, { position: number; until: number }>();
  return {
    async record(userIds, position) {
      const now = Date.now();
      if (local.size > LOCAL_ENTRIES_MAX) for (const [user, entry] of local) if (entry.until <= now) local.delete(user);
      for (const user of userIds) {
        const kept = local.get(user);
        if (!kept || kept.until <= now || kept.position < position) local.set(user, { position, until: now + WRITTEN_TTL_MS });
      }
    },
    ahead(userId, replayed) {
      const kept = local.get(userId);
      return kept !== undefined && kept.until > Date.now() && kept.position > replayed;
    },
  };
}

/** Shared so a write holds on every instance; own writes are also kept locally to skip the GET. */
function redisPositions(redis: Redis, log: Logger): WrittenPositions {
  const own = localPositions();
  const setMax = redisScript(redis, SET_MAX_SCRIPT);
  return {
    async record(userIds, position) {
      await own.record(userIds, position);
      await Promise.all(userIds.map((user) => setMax([writtenKey(user)], [position, WRITTEN_TTL_MS]))).catch((error) =>
        log.warn({ err: error }, 'could not share write positions in Redis; other instances may read older states'),
      );
    },
    ahead(userId, replayed) {
      if (own.ahead(userId, replayed)) return true;
      return redis.get(writtenKey(userId)).then(
        (value) => value !== null && Number(value) > replayed,
        () => true,
      );
    },
  };
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the replica within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** `replayed` is null while the replica is not known to answer. */
interface ReplayWatch {
  readonly replayed: number | null;
  /** No read goes to the replica until a poll succeeds. */
  down(error: unknown): void;
  stop(): Promise<void>;
}

function watchReplay(pool: pg.Pool, replica: Db, timeoutMs: number, log: Logger): ReplayWatch {
  let replayed: number | null = null;
  let warned = false;
  const down = (error: unknown) => {
    replayed = null;
    if (!warned) log.warn({ err: error }, 'read replica unavailable; reading from the primary until it answers again');
    warned = true;
  };
  // Idle connections the replica drops (a restart) are reported here, not to a caller.
  pool.on('error', down);
  const poller = startPeriodic(
    async () => {
      const [row] = await withTimeout(
        replica.rows<{ lsn: string | null }>(sql`select (pg_last_wal_replay_lsn() - '0/0')::text as lsn`),
        timeoutMs,
      );
      if (row?.lsn == null) throw new Error('DATABASE_REPLICA_URL is not a server in recovery (a streaming replica)');
      replayed = Number(row.lsn);
      if (warned) log.info('read replica answering again');
      warned = false;
    },
    REPLAY_POLL_MS,
    down,
  );
  return {
    get replayed() {
      return replayed;
    },
    down,
    stop: () => poller.stop(),
  };
}

function router(
  to: { primary: Db; replica: Db; watch: ReplayWatch; positions: WrittenPositions; timeoutMs: number },
  metrics: ReplicaMetrics,
) {
  const { primary, watch } = to;
  const fallbackFor = async (userId: string): Promise<FallbackReason | null> => {
    const replayed = watch.replayed;
    if (replayed === null) return 'unreachable';
    return (await to.positions.ahead(userId, replayed)) ? 'behind_write' : null;
  };
  const onPrimary = <T>(use: (db: Db) => Promise<T>, reason: FallbackReason): Promise<T> => {
    metrics.served(reason);
    return use(primary);
  };
  const onReplica = async <T>(use: (db: Db) => Promise<T>): Promise<T> => {
    let result: T;
    try {
      result = await withTimeout(use(to.replica), to.timeoutMs);
    } catch (error) {
      watch.down(error);
      return onPrimary(use, 'read_failed');
    }
    metrics.served(null);
    return result;
  };
  return (userId: string) => {
    let routed: Promise<FallbackReason | null> | undefined;
    return <T>(use: (db: Db) => Promise<T>): Promise<T> =>
      (routed ??= fallbackFor(userId)).then((reason) => {
        if (reason !== null) return onPrimary(use, reason);
        // The replica failed a read since this request was routed.
        return watch.replayed === null ? onPrimary(use, 'unreachable') : onReplica(use);
      });
  };
}

export async function openReplica(
  options: ReplicaOptions,
  primary: Db,
  backends: { redis: Redis | null; log: Logger; metrics: Registry },
): Promise<ReplicaReads> {
  const { redis, log } = backends;
  const { default: pgModule } = await import('pg');
  const pool: pg.Pool = new pgModule.Pool({
    connectionString: options.url,
    max: options.poolMax,
    connectionTimeoutMillis: options.timeoutMs,
    // What outlives the caller's wait (timeoutMs) is cut short by the replica itself.
    statement_timeout: options.timeoutMs * 4,
  });
  const replica = poolDb(pool, options.preparedStatements);
  const positions = redis ? redisPositions(redis, log) : localPositions();
  const watch = watchReplay(pool, replica, options.timeoutMs, log);
  const metrics = createReplicaMetrics(backends.metrics, primary, () => watch.replayed);

  const routeFor = router({ primary, replica, watch, positions, timeoutMs: options.timeoutMs }, metrics);

  return {
    readsFor(userId) {
      const route = routeFor(userId);
      return {
        rows: <T>(statement: Statement) => route((db) => db.rows<T>(statement)),
        // Writes never go to the replica.
        run: (statement: Statement) => primary.run(statement),
      };
    },
    async wrote(userIds) {
      const users = [...new Set(userIds)];
      if (users.length === 0) return;
      const position = await primary.rows<{ lsn: string }>(sql`select (pg_current_wal_insert_lsn() - '0/0')::text as lsn`).then(
        ([row]) => Number(row.lsn),
        () => UNKNOWN_POSITION,
      );
      await positions.record(users, position);
    },
    async close() {
      await watch.stop();
      await pool.end();
    },
  };
}
