/**
 * The raw floor: the service's REST routes done by hand with `node:http`, `pg` and `ioredis`, no
 * GraphQL, ORM or framework. Per request it does the same work with the same SQL the service
 * issues (checked against PostgreSQL's statement log): the key lookup, the per-key rate window in
 * Redis (the same Lua script as rate-limiter-flexible), then the operation's statements, page and
 * totals on two pooled connections at once. Statements the service sends on its own pool with
 * bound parameters (key lookups, feed, counts, marks) are sent so here; those it sends through
 * MikroORM (the skip trace's) have their literals inlined over the simple query protocol, as
 * MikroORM does. It serves only what the scenarios call, with valid input.
 *
 * Env: DATABASE_URL, REDIS_URL, PORT, DATABASE_POOL_MAX (10, as the service),
 * GATEWAY_RATE_LIMIT_PER_MIN, SKIPTRACE_RATE_LIMIT_PER_MIN.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Redis } from 'ioredis';
import pg from 'pg';
import { normalizeActor, standardizeAddress, traceCacheKey } from '../src/skip-trace/address/index.js';

const env = process.env;
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.DATABASE_POOL_MAX ?? 10) });
const redis = new Redis(env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableOfflineQueue: true, maxRetriesPerRequest: 1 });
const GATEWAY_LIMIT = Number(env.GATEWAY_RATE_LIMIT_PER_MIN ?? 1000);
const SKIPTRACE_LIMIT = Number(env.SKIPTRACE_RATE_LIMIT_PER_MIN ?? 1000);

// The script rate-limiter-flexible's RateLimiterRedis runs per consume.
redis.defineCommand('windowIncr', {
  numberOfKeys: 1,
  lua: `redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then redis.call('expire', KEYS[1], ARGV[2]) ttl = 1000 * ARGV[2] end
return {consumed, ttl}`,
});

async function consumeWindow(key: string, limit: number, res: ServerResponse): Promise<boolean> {
  const [consumed, ttl] = await (
    redis as unknown as { windowIncr(key: string, points: number, seconds: number): Promise<[number, number]> }
  ).windowIncr(`rlfloor:${key}`, 1, 60);
  res.setHeader('X-RateLimit-Limit', limit);
  res.setHeader('X-RateLimit-Remaining', Math.max(0, limit - consumed));
  res.setHeader('X-RateLimit-Reset', Math.ceil((Date.now() + ttl) / 1000));
  return consumed <= limit;
}

/** A SQL literal, formatted as MikroORM inlines parameters (E'' strings when a backslash is present). */
function lit(value: string | number | boolean | Date | null): string {
  if (value === null) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = value instanceof Date ? value.toISOString() : value;
  const quoted = text.replace(/'/g, "''");
  return text.includes('\\') ? ` E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

const sql = (text: string, client: pg.Pool | pg.PoolClient = pool) => client.query(text);
/** A statement with bound parameters ($1, $2, …), as the service's hot paths send them. */
const bound = (text: string, values: unknown[]) => pool.query(text, values);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const bearer = (req: IncomingMessage) => /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return JSON.parse(body) as Record<string, unknown>;
}

// --- Gateway ------------------------------------------------------------------------------

interface UserKey {
  id: string;
  user_id: string;
  scopes: string[];
}

async function gatewayKey(req: IncomingMessage): Promise<UserKey> {
  const token = bearer(req);
  if (!token?.startsWith('gk_')) throw new HttpError(401, 'invalid_key');
  const hash = sha256(token);
  const { rows } = await bound(
    `select k.id, k.key_hash, k.scopes, u.id as user_id, u.organization_id, u.role
             from api_keys k join users u on u.id = k.user_id
            where k.key_hash = $1 and k.revoked_at is null`,
    [hash],
  );
  if (!rows[0]) throw new HttpError(401, 'invalid_key');
  return rows[0] as UserKey;
}

const COLUMNS = `id, notification_type, is_seen, title, body, created_at, seen_at,
  contact_id, deal_id, note_id, reply_id, task_id, call_id, action_type, action_target_id`;

const ownerTag = (userId: string) => createHash('sha256').update(userId).digest('base64url').slice(0, 10);
const encodeCursor = (userId: string, createdAt: Date, id: string) =>
  Buffer.from(JSON.stringify([createdAt.getTime(), id, ownerTag(userId)])).toString('base64url');
function decodeCursor(userId: string, cursor: string): { createdAt: Date; id: string } {
  const [millis, id, tag] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [number, string, string];
  if (tag !== ownerTag(userId)) throw new HttpError(422, 'invalid_request');
  return { createdAt: new Date(millis), id };
}

const likePattern = (term: string) => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The service's statement: the caller's counter rows, summed here; types left at zero are not listed. */
async function counts(userId: string, type: string | null) {
  const { rows } = await bound(
    `select notification_type, unread_count, read_count from notification_counters
      where user_id = $1${type !== null ? ' and notification_type = $2' : ''} order by notification_type`,
    type !== null ? [userId, type] : [userId],
  );
  let unread = 0;
  let read = 0;
  const byType: { notificationType: string; unreadCount: number; readCount: number }[] = [];
  for (const r of rows) {
    const unreadCount = Number(r.unread_count);
    const readCount = Number(r.read_count);
    unread += unreadCount;
    read += readCount;
    if (unreadCount !== 0 || readCount !== 0) byType.push({ notificationType: r.notification_type, unreadCount, readCount });
  }
  return { unread, read, byType };
}

async function listNotifications(userId: string, v: Record<string, unknown>) {
  const limit = (v.limit as number | undefined) ?? 25;
  const type = (v.notificationTypeFilter as string | undefined) || null;
  const seen = (v.seen as boolean | undefined) ?? null;
  const search = (v.searchTerm as string | undefined) || null;
  const after = v.cursor ? decodeCursor(userId, v.cursor as string) : null;

  // The service's whereClause: conditions in the same order, values bound in order.
  const where = (withSeen: boolean, values: unknown[]) => {
    const p = (value: unknown) => `$${values.push(value)}`;
    const c = [`user_id = ${p(userId)}`];
    if (type !== null) c.push(`notification_type = ${p(type)}`);
    if (withSeen && seen !== null) c.push(`is_seen = ${p(seen)}`);
    if (search !== null) c.push(`(title ilike ${p(likePattern(search))} escape '\\' or body ilike ${p(likePattern(search))} escape '\\')`);
    return { c, p };
  };
  const pageValues: unknown[] = [];
  const { c: page, p } = where(true, pageValues);
  if (after) page.push(`(created_at, id) < (${p(after.createdAt)}, ${p(after.id)})`);
  const pageQuery = bound(
    `select ${COLUMNS} from notifications where ${page.join(' and ')}
      order by created_at desc, id desc limit ${limit + 1}`,
    pageValues,
  );
  const totals = async () => {
    if (search === null) {
      const c = await counts(userId, type);
      return { total: seen === null ? c.unread + c.read : seen ? c.read : c.unread, hasUnread: c.unread > 0 };
    }
    const values: unknown[] = seen === null ? [] : [seen];
    const { c } = where(false, values);
    const { rows } = await bound(
      `select count(*) filter (where ${seen === null ? 'true' : 'is_seen = $1'})::int as total,
            count(*) filter (where not is_seen)::int as unread
       from notifications where ${c.join(' and ')}`,
      values,
    );
    return { total: Number(rows[0].total), hasUnread: Number(rows[0].unread) > 0 };
  };
  const [{ rows }, { total, hasUnread }] = await Promise.all([pageQuery, totals()]);
  const more = rows.length > limit;
  const notifications = rows.slice(0, limit).map((r) => ({
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
  }));
  const last = rows[limit - 1];
  return { notifications, total, hasUnread, nextCursor: more && last ? encodeCursor(userId, last.created_at, last.id) : null };
}

// The service's per-user lock, taken in the same statement before any row (src/notifications/feed.data.ts).
const USER_WRITE_LOCK = `serialized as materialized (select pg_advisory_xact_lock(${0x6e6f7466}, hashtext($1::text)))`;

async function markNotificationsRead(userId: string, v: Record<string, unknown>) {
  const isSeen = v.isSeen as boolean;
  const ids = [...new Set((v.notificationIds as string[]).map((id) => id.toLowerCase()))].sort();
  const result = await bound(
    `with ${USER_WRITE_LOCK}
     update notifications set is_seen = $2, seen_at = ${isSeen ? 'now()' : 'null'} from serialized
        where user_id = $3 and id = any($4::uuid[]) and is_seen <> $5`,
    [userId, isSeen, userId, `{${ids.join(',')}}`, isSeen],
  );
  return { success: true, updatedCount: result.rowCount ?? 0 };
}

async function markAllNotificationsRead(userId: string, v: Record<string, unknown>) {
  const isSeen = v.isSeen as boolean;
  const type = (v.notificationTypeFilter as string | undefined) || null;
  const { rows } = await bound(
    `with ${USER_WRITE_LOCK},
     updated as (
       update notifications set is_seen = $2, seen_at = ${isSeen ? 'now()' : 'null'} from serialized
        where user_id = $3 and is_seen = $4${type !== null ? ' and notification_type = $5' : ''}
        returning id)
     select (select count(*) from updated)::int as updated,
            (select array_agg(id::text) from (select id from updated limit 501) listed) as ids`,
    [userId, isSeen, userId, !isSeen, ...(type !== null ? [type] : [])],
  );
  // The service then reads the owner's counts for its post-commit result.
  await counts(userId, null);
  return { success: true, updatedCount: Number(rows[0].updated) };
}

async function gateway(req: IncomingMessage, res: ServerResponse) {
  const key = await gatewayKey(req);
  if (!(await consumeWindow(`gateway:${key.id}`, GATEWAY_LIMIT, res))) throw new HttpError(429, 'rate_limited');
  const body = await readJson(req);
  const variables = (body.variables ?? {}) as Record<string, unknown>;
  switch (body.operationId) {
    case 'listNotifications':
      return listNotifications(key.user_id, variables);
    case 'getNotificationCounts': {
      const c = await counts(key.user_id, (variables.notificationTypeFilter as string | undefined) || null);
      return { unreadCount: c.unread, readCount: c.read, byType: c.byType };
    }
    case 'markNotificationsRead':
      return markNotificationsRead(key.user_id, variables);
    case 'markAllNotificationsRead':
      return markAllNotificationsRead(key.user_id, variables);
    default:
      throw new HttpError(404, 'unknown_operation');
  }
}

// --- Skip trace (the cached path) -----------------------------------------------------------

const inFlight = new Map<string, number>();

async function skipTrace(req: IncomingMessage, res: ServerResponse) {
  const startedAt = performance.now();
  const token = bearer(req);
  if (!token?.startsWith('stk_')) throw new HttpError(401, 'invalid_key');
  const hash = sha256(token);
  const { rows: keys } = await bound(
    `select id, key_hash, organization_id from skip_trace_keys where key_hash = $1 and revoked_at is null`,
    [hash],
  );
  const key = keys[0] as { id: string; organization_id: string } | undefined;
  if (!key) throw new HttpError(401, 'invalid_key');
  if (!(await consumeWindow(`skiptrace:${key.id}`, SKIPTRACE_LIMIT, res))) throw new HttpError(429, 'rate_limited');
  inFlight.set(key.id, (inFlight.get(key.id) ?? 0) + 1);
  try {
    const body = await readJson(req);
    const address = body.address as { line1: string; line2?: string; city: string; state: string; zip: string };
    const standard = standardizeAddress({ ...address, state: address.state.trim().toUpperCase() });
    const cacheKey = traceCacheKey(standard, normalizeActor(null));
    const requestId = randomUUID();

    const { rows: orgs } = await sql(
      `select skip_trace_enabled, skip_trace_credits from organizations where id = ${lit(key.organization_id)}`,
    );
    if (!orgs[0]?.skip_trace_enabled) throw new HttpError(403, 'feature_unavailable');
    if (orgs[0].skip_trace_credits <= 0) throw new HttpError(402, 'insufficient_credits');
    const { rows: cached } = await sql(
      `select status, persons from skip_trace_results where cache_key = ${lit(cacheKey)} and expires_at > now()`,
    );
    if (!cached[0]) throw new HttpError(500, 'not_cached'); // the floor serves the cached path only

    const client = await pool.connect();
    try {
      await sql('begin', client);
      const charged = await sql(
        `update organizations set skip_trace_credits = skip_trace_credits - 1 where id = ${lit(key.organization_id)} and skip_trace_credits > 0`,
        client,
      );
      if (charged.rowCount !== 1) throw new HttpError(402, 'insufficient_credits');
      await sql(
        `insert into skip_trace_credit_ledger (id, organization_id, kind, amount, request_id) values (${lit(randomUUID())}, ${lit(key.organization_id)}, 'charge', -1, ${lit(requestId)})`,
        client,
      );
      await sql(
        `insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms) values (${lit(requestId)}, ${lit(key.organization_id)}, ${lit(key.id)}, ${lit(cacheKey)}, ${lit(cached[0].status)}, true, true, ${Math.round(performance.now() - startedAt)})`,
        client,
      );
      await sql('commit', client);
    } catch (error) {
      await sql('rollback', client).catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
    return { id: requestId, status: cached[0].status, persons: cached[0].persons };
  } finally {
    inFlight.set(key.id, (inFlight.get(key.id) ?? 1) - 1);
  }
}

// --- HTTP -----------------------------------------------------------------------------------

function send(res: ServerResponse, status: number, payload: unknown) {
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': randomUUID(),
  });
  res.end(body);
}

const server = createServer(async (req, res) => {
  try {
    if (req.method === 'POST' && req.url === '/api/v1/call') return send(res, 200, { data: await gateway(req, res) });
    if (req.method === 'POST' && req.url === '/api/v1/skiptrace') return send(res, 200, await skipTrace(req, res));
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
