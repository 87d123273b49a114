/**
 * The same-SQL floor: the service's REST routes done by hand (`../lib/floor-kit.ts`), sending
 * exactly the statements the service sends now, the same way (checked against PostgreSQL's
 * statement log), in the same order and with the same concurrency. When the service's statements
 * change, this file changes with them; `naive.ts` stays as the service was.
 *
 * The gateway as the service runs it since the key lookup was folded in (`src/auth/key-preload.ts`):
 * every statement a named prepared statement; the key's rate window keyed by the key's hash and
 * spent concurrently with the first statement; a feed page or the counts as one statement that
 * also looks the key up (`with k as (…)`); a mark after the standalone lookup. The skip trace is
 * `same-sql-skip-trace.ts`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  bearer,
  bound,
  COLUMNS,
  consumeWindow,
  decodeCursor,
  encodeCursor,
  GATEWAY_LIMIT,
  HttpError,
  likePattern,
  readJson,
  redis,
  setWindowHeaders,
  sha256,
  sumCounters,
  toNotification,
  USER_WRITE_LOCK,
  type FloorRoutes,
} from '../lib/floor-kit.js';
import { counts, markAllNotificationsRead, type UserKey } from './naive.js';
import { skipTrace } from './same-sql-skip-trace.js';

/** The service's `GATEWAY_KEY_OWNER` (src/auth/api-keys.data.ts), its hash as $1. */
const KEY = `select k.id as key_id, k.key_hash, k.scopes as key_scopes, u.id as key_user_id,
         u.organization_id as key_organization_id, u.role as key_role
    from api_keys k join users u on u.id = k.user_id
   where k.key_hash = $1 and k.revoked_at is null`;

/** The service's standalone key lookup (`findActiveGatewayKey`), for a mark; 401 without a row. */
async function gatewayKey(hash: string): Promise<UserKey> {
  const { rows } = await bound(
    `select k.id, k.key_hash, k.scopes, u.id as user_id, u.organization_id, u.role
       from api_keys k join users u on u.id = k.user_id
      where k.key_hash = $1 and k.revoked_at is null`,
    [hash],
  );
  if (!rows[0]) throw new HttpError(401, 'invalid_key');
  return rows[0] as UserKey;
}

/** The service's mark by ids (`updateSeen`, the changed ids returned), then its change event (`notification-events.ts`). */
async function markNotificationsRead(userId: string, v: Record<string, unknown>) {
  const isSeen = v.isSeen as boolean;
  const ids = [...new Set((v.notificationIds as string[]).map((id) => id.toLowerCase()))].sort();
  const { rows } = await bound(
    `with ${USER_WRITE_LOCK}
     update notifications set is_seen = $2, seen_at = ${isSeen ? 'now()' : 'null'} from serialized
      where user_id = $3 and id = any($4::uuid[]) and is_seen <> $5 returning id`,
    [userId, isSeen, userId, `{${ids.join(',')}}`, isSeen],
  );
  // The service's change event: the owner's counts, published on the event bus (Redis).
  if (rows.length) {
    const c = await counts(userId, null);
    await redis.publish(
      `notifications:events:${userId}`,
      JSON.stringify({ events: [{ kind: 'updated', ids: rows.map((r) => r.id) }], counts: c.byType }),
    );
  }
  return { success: true, updatedCount: rows.length };
}

/** The key's columns of a folded statement's first row, as the naive floor's lookup names them; 401 without one. */
function keyOf(rows: Record<string, unknown>[]): UserKey {
  const row = rows[0];
  if (!row) throw new HttpError(401, 'invalid_key');
  return { id: row.key_id as string, user_id: row.key_user_id as string, scopes: row.key_scopes as string[] };
}

/** The service's `counterRowsOfKey`. */
async function countsOfKey(hash: string, type: string | null) {
  const { rows } = await bound(
    `with k as (${KEY})
     select k.*, c.notification_type, c.unread_count, c.read_count
       from k left join notification_counters c on c.user_id = k.key_user_id${type !== null ? ' and c.notification_type = $2' : ''}
      order by c.notification_type`,
    type !== null ? [hash, type] : [hash],
  );
  keyOf(rows);
  const c = sumCounters(rows.filter((row) => row.notification_type !== null));
  return { unreadCount: c.unread, readCount: c.read, byType: c.byType };
}

/** The service's `feedRowsOfKey`: the key, the totals and the page in one statement. */
async function listOfKey(hash: string, v: Record<string, unknown>) {
  const limit = (v.limit as number | undefined) ?? 25;
  const type = (v.notificationTypeFilter as string | undefined) || null;
  const seen = (v.seen as boolean | undefined) ?? null;
  const search = (v.searchTerm as string | undefined) || null;
  const cursor = v.cursor ? (JSON.parse(Buffer.from(v.cursor as string, 'base64url').toString('utf8')) as [number, string]) : null;

  const values: unknown[] = [hash];
  const p = (value: unknown) => `$${values.push(value)}`;
  // The service's whereClause for the key's owner: conditions in the same order, values bound in order.
  const where = (withSeen: boolean) => {
    const c = ['user_id = k.key_user_id'];
    if (type !== null) c.push(`notification_type = ${p(type)}`);
    if (withSeen && seen !== null) c.push(`is_seen = ${p(seen)}`);
    if (search !== null) c.push(`(title ilike ${p(likePattern(search))} escape '\\' or body ilike ${p(likePattern(search))} escape '\\')`);
    return c;
  };
  let totals: string;
  if (search === null) {
    const total = seen === null ? 'c.unread_count + c.read_count' : seen ? 'c.read_count' : 'c.unread_count';
    totals = `select coalesce(sum(${total}), 0)::int as total, coalesce(sum(c.unread_count), 0)::int as unread
               from notification_counters c join k on c.user_id = k.key_user_id${type !== null ? ` where c.notification_type = ${p(type)}` : ''}`;
  } else {
    const seenCondition = seen === null ? 'true' : `is_seen = ${p(seen)}`;
    totals = `select count(*) filter (where ${seenCondition})::int as total,
            count(*) filter (where not is_seen)::int as unread
       from notifications, k where ${where(false).join(' and ')}`;
  }
  const page = where(true);
  if (cursor) page.push(`(created_at, id) < (${p(new Date(cursor[0]))}, ${p(cursor[1])})`);
  const { rows } = await bound(
    `with k as (${KEY}), t as (${totals})
     select k.*, t.total, t.unread, n.* from k cross join t left join lateral (select ${COLUMNS} from notifications where ${page.join(' and ')}
      order by created_at desc, id desc limit ${limit + 1}) n on true
      order by n.created_at desc, n.id desc`,
    values,
  );
  const key = keyOf(rows);
  if (v.cursor) decodeCursor(key.user_id, v.cursor as string); // the owner's check, once the owner is known
  const found = rows.filter((row) => row.id !== null);
  const more = found.length > limit;
  const last = found[limit - 1];
  return {
    notifications: found.slice(0, limit).map(toNotification),
    total: Number(rows[0].total),
    hasUnread: Number(rows[0].unread) > 0,
    nextCursor: more && last ? encodeCursor(key.user_id, last.created_at as Date, last.id as string) : null,
  };
}

async function gateway(req: IncomingMessage, res: ServerResponse) {
  const token = bearer(req);
  if (!token?.startsWith('gk_')) throw new HttpError(401, 'invalid_key');
  const hash = sha256(token);
  // The window's point, keyed by the hash, under way while the body is read and the statement runs.
  const window = consumeWindow(`gateway:${hash.slice(0, 32)}`, GATEWAY_LIMIT);
  window.catch(() => undefined);
  const body = await readJson(req);
  const variables = (body.variables ?? {}) as Record<string, unknown>;
  const settle = async <T>(work: Promise<T>): Promise<T> => {
    const [value, decision] = await Promise.all([work, window]);
    setWindowHeaders(res, decision);
    if (!decision.allowed) throw new HttpError(429, 'rate_limited');
    return value;
  };
  switch (body.operationId) {
    case 'listNotifications':
      return settle(listOfKey(hash, variables));
    case 'getNotificationCounts':
      return settle(countsOfKey(hash, (variables.notificationTypeFilter as string | undefined) || null));
    case 'markNotificationsRead':
      return markNotificationsRead((await settle(gatewayKey(hash))).user_id, variables);
    case 'markAllNotificationsRead':
      return markAllNotificationsRead((await settle(gatewayKey(hash))).user_id, variables);
    default:
      throw new HttpError(404, 'unknown_operation');
  }
}

export const sameSqlFloor: FloorRoutes = { gateway, skipTrace, preparedStatements: true };
