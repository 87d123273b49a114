/**
 * What the floors (`bench/floors/`) share: the HTTP server, the credential and body reading, the
 * Redis window script, the cursor codec, the feed's row shape, and the pool and Redis client. A
 * floor is the service's REST routes done by hand with `node:http`, `pg` and `ioredis`, no GraphQL,
 * ORM or framework; floors differ only in the statements they send, which each floor file holds.
 *
 * Env: DATABASE_URL, REDIS_URL, PORT, DATABASE_POOL_MAX (10, as the service),
 * GATEWAY_RATE_LIMIT_PER_MIN, SKIPTRACE_RATE_LIMIT_PER_MIN.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Redis } from 'ioredis';
import pg from 'pg';
import { normalizeActor, standardizeAddress, traceCacheKey } from '../../src/address/index.js';

const env = process.env;
export const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.DATABASE_POOL_MAX ?? 10) });
export const redis = new Redis(env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableOfflineQueue: true, maxRetriesPerRequest: 1 });
export const GATEWAY_LIMIT = Number(env.GATEWAY_RATE_LIMIT_PER_MIN ?? 1000);
export const SKIPTRACE_LIMIT = Number(env.SKIPTRACE_RATE_LIMIT_PER_MIN ?? 1000);

// The script rate-limiter-flexible's RateLimiterRedis runs per consume.
redis.defineCommand('windowIncr', {
  numberOfKeys: 1,
  lua: `redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then redis.call('expire', KEYS[1], ARGV[2]) ttl = 1000 * ARGV[2] end
return {consumed, ttl}`,
});

export interface WindowDecision {
  allowed: boolean;
  limit: number;
  consumed: number;
  ttl: number;
}

/** One point of a per-minute window (one Redis script), without touching the response. */
export async function consumeWindow(key: string, limit: number): Promise<WindowDecision> {
  const [consumed, ttl] = await (
    redis as unknown as { windowIncr(key: string, points: number, seconds: number): Promise<[number, number]> }
  ).windowIncr(`rlfloor:${key}`, 1, 60);
  return { allowed: consumed <= limit, limit, consumed, ttl };
}

/** The rate-limit headers of a window decision. */
export function setWindowHeaders(res: ServerResponse, decision: WindowDecision) {
  res.setHeader('X-RateLimit-Limit', decision.limit);
  res.setHeader('X-RateLimit-Remaining', Math.max(0, decision.limit - decision.consumed));
  res.setHeader('X-RateLimit-Reset', Math.ceil((Date.now() + decision.ttl) / 1000));
}

/** A SQL literal, formatted as MikroORM inlines parameters (E'' strings when a backslash is present). */
export function lit(value: string | number | boolean | Date | null): string {
  if (value === null) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = value instanceof Date ? value.toISOString() : value;
  const quoted = text.replace(/'/g, "''");
  return text.includes('\\') ? ` E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

/** A statement over the simple protocol (literals inlined). */
export const sql = (text: string, client: pg.Pool | pg.PoolClient = pool) => client.query(text);
/**
 * Whether `bound` sends named prepared statements (one name per statement text, as the service's
 * `src/infra/database/sql.ts` does): set per floor process by `serveFloor` from the floor's
 * `preparedStatements`, so a floor that reuses another's functions sends their statements its own way.
 */
let preparedStatements = false;
const statementNames = new Map<string, string>();
const statementName = (text: string) => {
  let name = statementNames.get(text);
  if (name === undefined) statementNames.set(text, (name = `s${statementNames.size}`));
  return name;
};
/** A statement with bound parameters ($1, $2, …), named when the floor prepares its statements. */
export const bound = (text: string, values: unknown[]) =>
  pool.query(preparedStatements ? { name: statementName(text), text, values } : { text, values });
export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
export const bearer = (req: IncomingMessage) => /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return JSON.parse(body) as Record<string, unknown>;
}

// --- The feed's shapes ------------------------------------------------------------------------

export const COLUMNS = `id, notification_type, is_seen, title, body, created_at, seen_at,
  contact_id, deal_id, note_id, reply_id, task_id, call_id, action_type, action_target_id, archived_at`;

const ownerTag = (userId: string) => createHash('sha256').update(userId).digest('base64url').slice(0, 10);
export const encodeCursor = (userId: string, createdAt: Date, id: string) =>
  Buffer.from(JSON.stringify([createdAt.getTime(), id, ownerTag(userId)])).toString('base64url');
export function decodeCursor(userId: string, cursor: string): { createdAt: Date; id: string } {
  const [millis, id, tag] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [number, string, string];
  if (tag !== ownerTag(userId)) throw new HttpError(422, 'invalid_request');
  return { createdAt: new Date(millis), id };
}

export const likePattern = (term: string) => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** A feed row as the API answers it. */
export const toNotification = (r: Record<string, unknown>) => ({
  id: r.id,
  notificationType: r.notification_type,
  isSeen: r.is_seen,
  title: r.title,
  body: r.body,
  createdAt: (r.created_at as Date).toISOString(),
  seenAt: r.seen_at ? (r.seen_at as Date).toISOString() : null,
  contactId: r.contact_id,
  dealId: r.deal_id,
  noteId: r.note_id,
  replyId: r.reply_id,
  taskId: r.task_id,
  callId: r.call_id,
  actionType: r.action_type,
  actionTargetId: r.action_target_id,
  archivedAt: r.archived_at ? (r.archived_at as Date).toISOString() : null,
});

/** Counter rows (notification_type, unread_count, read_count) summed; types left at zero are not listed. */
export function sumCounters(rows: Record<string, unknown>[]) {
  let unread = 0;
  let read = 0;
  const merged: { notificationType: string; unreadCount: number; readCount: number }[] = [];
  // Rows sorted by type; a type may come twice (its counter row, then its expired rows negated).
  for (const r of rows) {
    const unreadCount = Number(r.unread_count);
    const readCount = Number(r.read_count);
    unread += unreadCount;
    read += readCount;
    const last = merged.at(-1);
    if (last && last.notificationType === r.notification_type) {
      last.unreadCount += unreadCount;
      last.readCount += readCount;
    } else merged.push({ notificationType: r.notification_type as string, unreadCount, readCount });
  }
  return { unread, read, byType: merged.filter((t) => t.unreadCount !== 0 || t.readCount !== 0) };
}

// The service's per-user lock, taken in the same statement before any row (src/notifications/feed.data.ts).
export const USER_WRITE_LOCK = `serialized as materialized (select pg_advisory_xact_lock(${0x6e6f7466}, hashtext($1::text)))`;

// --- Skip trace --------------------------------------------------------------------------------

// --- Kept keys (the same-SQL floor's, as src/auth/principal-cache.ts keeps principals) ----------

const VERSION_KEY = 'floor:principals-version';
const keptKeys = new Map<string, { key: unknown; version: string }>();
let lastVersion: string | null = null;
const readVersion = () =>
  redis.get(VERSION_KEY).then((version) => {
    if (version === null) void redis.set(VERSION_KEY, randomUUID(), 'NX');
    return (lastVersion = version);
  });

/** A key's row kept while the version read alongside each request is the one it was stamped with. */
export async function keptKey<K>(hash: string, lookup: () => Promise<K | null>): Promise<K | null> {
  const found = keptKeys.get(hash);
  const reading = readVersion();
  const stamp = found ? await reading : (lastVersion ?? (await reading));
  if (found && stamp !== null && stamp === found.version) return found.key as K;
  const key = await lookup();
  if (key && stamp !== null) keptKeys.set(hash, { key, version: stamp });
  return key;
}

/** The skip trace key of a hash, looked up on every call (the naive floor). */
export async function skipTraceKeyOf(hash: string): Promise<SkipTraceCall['key'] | null> {
  const { rows } = await bound(`select id, key_hash, organization_id from skip_trace_keys where key_hash = $1 and revoked_at is null`, [
    hash,
  ]);
  return (rows[0] as SkipTraceCall['key'] | undefined) ?? null;
}

/** A cached skip trace call once admitted: its key, the address's cache key and the request's id. */
export interface SkipTraceCall {
  key: { id: string; organization_id: string };
  cacheKey: string;
  requestId: string;
  startedAt: number;
}

const skipTraceInFlight = new Map<string, number>();

/**
 * What both floors do before a skip trace's own statements, as the service does: the key (`keyOf`),
 * then the key's window, then its in-flight count (held during `work`), the body and its address.
 */
export async function admitSkipTrace<T>(
  req: IncomingMessage,
  res: ServerResponse,
  keyOf: (hash: string) => Promise<SkipTraceCall['key'] | null>,
  work: (call: SkipTraceCall) => Promise<T>,
): Promise<T> {
  const startedAt = performance.now();
  const token = bearer(req);
  if (!token?.startsWith('stk_')) throw new HttpError(401, 'invalid_key');
  const key = await keyOf(sha256(token));
  if (!key) throw new HttpError(401, 'invalid_key');
  const decision = await consumeWindow(`skiptrace:${key.id}`, SKIPTRACE_LIMIT);
  setWindowHeaders(res, decision);
  if (!decision.allowed) throw new HttpError(429, 'rate_limited');
  skipTraceInFlight.set(key.id, (skipTraceInFlight.get(key.id) ?? 0) + 1);
  try {
    const body = await readJson(req);
    const address = body.address as { line1: string; line2?: string; city: string; state: string; zip: string };
    const standard = standardizeAddress({ ...address, state: address.state.trim().toUpperCase() });
    return await work({ key, cacheKey: traceCacheKey(standard, normalizeActor(null)), requestId: randomUUID(), startedAt });
  } finally {
    skipTraceInFlight.set(key.id, (skipTraceInFlight.get(key.id) ?? 1) - 1);
  }
}

// --- HTTP -------------------------------------------------------------------------------------

function send(res: ServerResponse, status: number, payload: unknown) {
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': randomUUID(),
  });
  res.end(body);
}

/** The routes a floor serves: each returns the 200 body, or throws an HttpError. */
export interface FloorRoutes {
  gateway(req: IncomingMessage, res: ServerResponse): Promise<unknown>;
  skipTrace(req: IncomingMessage, res: ServerResponse): Promise<unknown>;
  /** Whether its `bound` statements are named prepared statements (see `bound`). */
  preparedStatements?: boolean;
}

/** Serves `/api/v1/call`, `/api/v1/skiptrace` and `/readyz` on PORT until SIGTERM. */
export function serveFloor(routes: FloorRoutes) {
  preparedStatements = routes.preparedStatements ?? false;
  const server = createServer(async (req, res) => {
    try {
      if (req.method === 'POST' && req.url === '/api/v1/call') return send(res, 200, { data: await routes.gateway(req, res) });
      if (req.method === 'POST' && req.url === '/api/v1/skiptrace') return send(res, 200, await routes.skipTrace(req, res));
      if (req.method === 'GET' && req.url === '/readyz') {
        await sql('select 1');
        await redis.ping();
        return send(res, 200, { status: 'ready' });
      }
      throw new HttpError(404, 'not_found');
    } catch (error) {
      if (error instanceof HttpError) return send(res, error.status, { error: { code: error.code, message: error.code } });
      if ((error as { code?: string }).code === 'ECONNRESET') return; // the client went away (the end of a load run)
      console.error(error);
      return send(res, 500, { error: { code: 'internal_error', message: 'Unexpected error; retry.' } });
    }
  });
  server.keepAliveTimeout = 72_000;
  server.listen(Number(env.PORT ?? 4001), '127.0.0.1');

  const shutdown = () => server.close(() => void Promise.all([pool.end(), redis.quit()]).finally(() => process.exit(0)));
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
