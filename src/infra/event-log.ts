import type { Redis } from 'ioredis';
import type { EventBus } from './event-bus.js';
import { redisScript } from './redis-script.js';

/**
 * Lets a reconnecting stream resume from its last id. Appending publishes in the same step, so
 * listeners hear messages in id order. Ids are Redis stream ids (`<ms>-<seq>`) in both implementations.
 */
export interface EventLog {
  /** On rejection nothing was published. */
  append(key: string, channel: string, message: string): Promise<string>;
  /** Not found once `fromId` left the log or the window; `tailId` is then where to resume after a full re-read. */
  readFrom(key: string, fromId: string): Promise<LogRead>;
  close(): void;
}

export type LogRead = { found: true; entries: LogEntry[] } | { found: false; tailId: string };

export interface LogEntry {
  id: string;
  message: string;
}

export interface EventLogLimits {
  maxEntries: number;
  /** A key idle this long is dropped. */
  windowMs: number;
}

export const EVENT_LOG_LIMITS: EventLogLimits = { maxEntries: 1000, windowMs: 5 * 60_000 };

const ID = /^(\d{1,15})-(\d{1,15})$/;

export function parseLogId(raw: string): [number, number] | null {
  const match = ID.exec(raw);
  return match ? [Number(match[1]), Number(match[2])] : null;
}

/** One script, so ids and messages reach listeners in the same order; the window uses Redis's own clock. */
const APPEND = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], '*', 'm', ARGV[1])
redis.call('XTRIM', KEYS[1], 'MINID', '~', tostring(now - tonumber(ARGV[3])))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', KEYS[2], id .. ' ' .. ARGV[1])
return id`;

/** An empty log gets an anchor entry (never published or replayed) so there is always a tail id. */
const READ_FROM = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ms = tonumber(string.match(ARGV[1], '^(%d+)-'))
if ms and ms >= now - tonumber(ARGV[2]) then
  local entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[3])
  if entries[1] and entries[1][1] == ARGV[1] then return {1, entries} end
end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if last[1] then return {0, last[1][1]} end
local anchor = redis.call('XADD', KEYS[1], '*', 'a', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {0, anchor}`;

export function createRedisEventLog(redis: Redis, limits: EventLogLimits = EVENT_LOG_LIMITS): EventLog {
  const [append, readFrom] = [redisScript(redis, APPEND), redisScript(redis, READ_FROM)];
  return {
    async append(key, channel, message) {
      return (await append([key, channel], [message, limits.maxEntries, limits.windowMs])) as string;
    },
    async readFrom(key, fromId) {
      const [found, value] = (await readFrom([key], [fromId, limits.windowMs, limits.maxEntries])) as [
        number,
        string | Array<[string, string[]]>,
      ];
      if (!found) return { found: false, tailId: value as string };
      const entries = (value as Array<[string, string[]]>).flatMap(([id, fields]) =>
        fields[0] === 'm' ? [{ id, message: fields[1] }] : [],
      );
      return { found: true, entries };
    },
    close() {},
  };
}

/** Without Redis. Idle keys are dropped, so memory follows the keys in use. */
export function createLocalEventLog(bus: EventBus, limits: EventLogLimits = EVENT_LOG_LIMITS, now: () => number = Date.now) {
  interface Log {
    entries: Array<LogEntry & { anchor?: true }>;
    last: [number, number];
    touchedAt: number;
  }
  const logs = new Map<string, Log>();
  const logOf = (key: string) => {
    let log = logs.get(key);
    if (!log) logs.set(key, (log = { entries: [], last: [0, 0], touchedAt: now() }));
    const t = now();
    log.touchedAt = t;
    while (log.entries.length && parseLogId(log.entries[0].id)![0] < t - limits.windowMs) log.entries.shift();
    return log;
  };
  const add = (log: Log, entry: { message: string; anchor?: true }) => {
    const t = now();
    log.last = t > log.last[0] ? [t, 0] : [log.last[0], log.last[1] + 1];
    const id = `${log.last[0]}-${log.last[1]}`;
    log.entries.push({ id, ...entry });
    if (log.entries.length > limits.maxEntries) log.entries.shift();
    return id;
  };
  const sweep = setInterval(
    () => {
      const idleSince = now() - limits.windowMs;
      for (const [key, log] of logs) if (log.touchedAt < idleSince) logs.delete(key);
    },
    Math.min(limits.windowMs, 60_000),
  );
  sweep.unref();

  const log: EventLog & { size(): number } = {
    async append(key, channel, message) {
      const id = add(logOf(key), { message });
      await bus.publish(channel, `${id} ${message}`);
      return id;
    },
    async readFrom(key, fromId) {
      const entries = logOf(key).entries;
      const at = entries.findIndex((entry) => entry.id === fromId);
      if (at >= 0) return { found: true, entries: entries.slice(at).flatMap((e) => (e.anchor ? [] : [{ id: e.id, message: e.message }])) };
      const tail = entries.at(-1)?.id;
      return { found: false, tailId: tail ?? add(logOf(key), { message: '', anchor: true }) };
    },
    size: () => logs.size,
    close: () => clearInterval(sweep),
  };
  return log;
}
