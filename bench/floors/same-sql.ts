/**
 * The same-SQL floor: the service's REST routes done by hand (`../lib/floor-kit.ts`), sending
 * exactly the statements the service sends now, the same way (checked against PostgreSQL's
 * statement log), in the same order and with the same concurrency. When the service's statements
 * change, this file changes with them; `naive.ts` stays as the service was.
 *
 * The gateway as the service runs it: every statement a named prepared statement; the key looked
 * up (`findActiveGatewayKey`) while a point of its rate window, keyed by the key's hash, is spent
 * in Redis, before the body is read; then the operation's statements, which are those of the
 * naive floor for the counts (the counter rows), the service's one statement for a feed page and
 * its totals (`listNotifications` below), and a mark that returns the changed ids and publishes its event. The skip trace is `same-sql-skip-trace.ts`.
 *
 * Not ported yet: the feed's read marks, archive and expiry (rows read through
 * `notification_seen_state`, archived and expired rows left out, `mark_gen` on marks by id,
 * `notification_mark_all`). Until they are, this floor sends the statements from before them, and
 * its figures are a floor for those statements, not for the service's current ones.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  bearer,
  bound,
  COLUMNS,
  consumeWindow,
  decodeCursor,
  encodeCursor,
  type FloorRoutes,
  GATEWAY_LIMIT,
  HttpError,
  likePattern,
  readJson,
  redis,
  setWindowHeaders,
  sha256,
  toNotification,
  USER_WRITE_LOCK,
} from '../lib/floor-kit.js';
import { counts, markAllNotificationsRead, type UserKey } from './naive.js';
import { skipTrace } from './same-sql-skip-trace.js';

/** The service's key lookup (`findActiveGatewayKey`); null without a row. */
async function gatewayKey(hash: string): Promise<UserKey | null> {
  const { rows } = await bound(
    `select k.id, k.key_hash, k.scopes, u.id as user_id, u.organization_id, u.role
       from api_keys k join users u on u.id = k.user_id
      where k.key_hash = $1 and k.revoked_at is null`,
    [hash],
  );
  return (rows[0] as UserKey | undefined) ?? null;
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

/** The service's `selectFeedPage` (notifications/feed.data.ts): the filter's totals and the page in one statement. */
async function listNotifications(userId: string, v: Record<string, unknown>) {
  const limit = (v.limit as number | undefined) ?? 25;
  const type = (v.notificationTypeFilter as string | undefined) || null;
  const seen = (v.seen as boolean | undefined) ?? null;
  const search = (v.searchTerm as string | undefined) || null;
  const after = v.cursor ? decodeCursor(userId, v.cursor as string) : null;
  const values: unknown[] = [];
  const p = (value: unknown) => `$${values.push(value)}`;
  const matching = (withSeen: boolean) => {
    const c = [`user_id = ${p(userId)}`];
    if (type !== null) c.push(`notification_type = ${p(type)}`);
    if (withSeen && seen !== null) c.push(`is_seen = ${p(seen)}`);
    if (search !== null) {
      const pattern = likePattern(search);
      c.push(`(title ilike ${p(pattern)} escape '\\' or body ilike ${p(pattern)} escape '\\')`);
    }
    return c.join(' and ');
  };
  const totals =
    search !== null
      ? `select count(*) filter (where ${seen === null ? 'true' : `is_seen = ${p(seen)}`})::int as total,
                count(*) filter (where not is_seen)::int as unread
           from notifications where ${matching(false)}`
      : `select coalesce(sum(${seen === null ? 'unread_count + read_count' : seen ? 'read_count' : 'unread_count'}), 0)::int as total,
                coalesce(sum(unread_count), 0)::int as unread
           from notification_counters where user_id = ${p(userId)}${type !== null ? ` and notification_type = ${p(type)}` : ''}`;
  const page = matching(true) + (after ? ` and (created_at, id) < (${p(after.createdAt)}, ${p(after.id)})` : '');
  const { rows } = await bound(
    `with t as (${totals})
     select t.total, t.unread, n.* from t left join lateral (
       select ${COLUMNS} from notifications where ${page}
        order by created_at desc, id desc limit ${limit + 1}) n on true
      order by n.created_at desc, n.id desc`,
    values,
  );
  const found = rows.filter((row) => row.id !== null);
  const last = found[limit - 1];
  return {
    notifications: found.slice(0, limit).map(toNotification),
    total: Number(rows[0].total),
    hasUnread: Number(rows[0].unread) > 0,
    nextCursor: found.length > limit && last ? encodeCursor(userId, last.created_at as Date, last.id as string) : null,
  };
}

async function gateway(req: IncomingMessage, res: ServerResponse) {
  const token = bearer(req);
  if (!token?.startsWith('gk_')) throw new HttpError(401, 'invalid_key');
  const hash = sha256(token);
  // The service's credential stage: the lookup and the window's point in parallel, then the body.
  const [key, decision] = await Promise.all([gatewayKey(hash), consumeWindow(`gateway:${hash.slice(0, 32)}`, GATEWAY_LIMIT)]);
  if (!key) throw new HttpError(401, 'invalid_key');
  setWindowHeaders(res, decision);
  if (!decision.allowed) throw new HttpError(429, 'rate_limited');
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

export const sameSqlFloor: FloorRoutes = { gateway, skipTrace, preparedStatements: true };
