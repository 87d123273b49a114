/**
 * The naive floor, frozen: the statements the service sent before the key lookup was folded into
 * the operation's statement (commit 52ef196), sent the same way, one after another: the key lookup,
 * then the per-key rate window in Redis, then the operation's statements (a feed page and its
 * totals on two pooled connections at once). Statements the service sent on its own pool with
 * bound parameters (key lookups, feed, counts, marks) are sent so here; those it sent through
 * MikroORM (the skip trace's) have their literals inlined over the simple query protocol, as
 * MikroORM does. It serves only what the scenarios call, with valid input. Do not change it: it is
 * the baseline the targets are set against (`targets.ts`); `same-sql.ts` follows the service.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  admitSkipTrace,
  skipTraceKeyOf,
  bearer,
  bound,
  COLUMNS,
  consumeWindow,
  decodeCursor,
  encodeCursor,
  GATEWAY_LIMIT,
  HttpError,
  likePattern,
  lit,
  pool,
  readJson,
  setWindowHeaders,
  sha256,
  sql,
  sumCounters,
  toNotification,
  USER_WRITE_LOCK,
  type FloorRoutes,
} from '../lib/floor-kit.js';

// --- Gateway ------------------------------------------------------------------------------

export interface UserKey {
  id: string;
  user_id: string;
  scopes: string[];
}

export async function gatewayKey(req: IncomingMessage): Promise<UserKey> {
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

/** The service's statement: the caller's counter rows, summed here; types left at zero are not listed. */
export async function counts(userId: string, type: string | null) {
  const { rows } = await bound(
    `select notification_type, unread_count, read_count from notification_counters
      where user_id = $1${type !== null ? ' and notification_type = $2' : ''} order by notification_type`,
    type !== null ? [userId, type] : [userId],
  );
  return sumCounters(rows);
}

export async function listNotifications(userId: string, v: Record<string, unknown>) {
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
  const notifications = rows.slice(0, limit).map(toNotification);
  const last = rows[limit - 1];
  return { notifications, total, hasUnread, nextCursor: more && last ? encodeCursor(userId, last.created_at, last.id) : null };
}

export async function markNotificationsRead(userId: string, v: Record<string, unknown>) {
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

export async function markAllNotificationsRead(userId: string, v: Record<string, unknown>) {
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

export async function gateway(req: IncomingMessage, res: ServerResponse) {
  const key = await gatewayKey(req);
  const decision = await consumeWindow(`gateway:${key.id}`, GATEWAY_LIMIT);
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

// --- Skip trace (the cached path) -----------------------------------------------------------

export function skipTrace(req: IncomingMessage, res: ServerResponse) {
  return admitSkipTrace(req, res, skipTraceKeyOf, async ({ key, cacheKey, requestId, startedAt }) => {
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
  });
}

export const naiveFloor: FloorRoutes = { gateway, skipTrace };
