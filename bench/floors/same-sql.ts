/**
 * The same-SQL floor: the service's REST routes done by hand (`../lib/floor-kit.ts`), sending
 * exactly the statements the service sends now, the same way (checked against PostgreSQL's
 * statement log: `log_statement = all` on the bench database, one request of each scenario to
 * the service and to this floor, the texts compared), in the same order and with the same
 * concurrency. When the service's statements change, this file changes with them; `naive.ts`
 * stays as the service was.
 *
 * The gateway as the service runs it: every statement a named prepared statement; the key kept
 * between requests while the version read alongside is unchanged (`keptKey`, as the service's
 * `auth/principal-cache.ts`), else looked up (`findActiveGatewayKey`), while a point of its rate
 * window, keyed by the key's hash, is spent in Redis, before the body is read; then the operation's statements, those of
 * `notifications/feed.data.ts` since the read marks, archive and expiry: a feed page and its
 * totals in one statement (each row's state read through `notification_seen_states`, archived and
 * expired rows left out, totals from the live counter rows), the counts from the counter rows less
 * the expired rows not swept yet, a mark by id that takes the latest mark-all's `mark_gen` and
 * returns the changed ids, a mark of everything through `notification_mark_all`; each mark then
 * reads every type's counts and publishes its event. The skip trace is `same-sql-skip-trace.ts`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  bearer,
  bound,
  consumeWindow,
  decodeCursor,
  encodeCursor,
  type FloorRoutes,
  GATEWAY_LIMIT,
  HttpError,
  keptKey,
  likePattern,
  readJson,
  redis,
  setWindowHeaders,
  sha256,
  sumCounters,
  toNotification,
  USER_WRITE_LOCK,
} from '../lib/floor-kit.js';
import type { UserKey } from './naive.js';
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

/** A row's state through the user's mark-alls, as the service reads it (`seenState`, `STATE` in feed.data.ts); `row` is the alias with its dot, or ''. */
const stateArguments = (row: string) =>
  ['user_id', 'notification_type', 'inserted_xid', 'mark_gen', 'archived_at', 'is_seen', 'seen_at'].map((c) => row + c).join(', ');
const STATE = `cross join lateral notification_seen_states(${stateArguments('n.')}) s`;
/** The feed's columns with the state read through the marks (`COLUMNS` in feed.data.ts). */
const STATE_COLUMNS = `n.id, n.notification_type, s.is_seen, n.title, n.body, n.created_at, s.seen_at,
  n.contact_id, n.deal_id, n.note_id, n.reply_id, n.task_id, n.call_id, n.action_type, n.action_target_id, n.archived_at`;

/**
 * The service's `liveCounters`: the counter rows, then the expired rows the sweep has not deleted
 * yet, negated (scalar state, not inlined); `mark_gen` for the page's gate.
 */
function liveCounters(p: (value: unknown) => string, userId: string, type: string | null) {
  const ofType = (column: string) => (type !== null ? ` and ${column} = ${p(type)}` : '');
  return `select notification_type, unread_count, read_count, mark_gen from notification_counters where user_id = ${p(userId)}${ofType('notification_type')}
      union all
      select n.notification_type, -count(*) filter (where not s.is_seen), -count(*) filter (where s.is_seen), 0
        from notifications n cross join lateral notification_seen_state(${stateArguments('n.')}) s
       where n.user_id = ${p(userId)} and n.expires_at <= now() and n.archived_at is null${ofType('n.notification_type')}
       group by n.notification_type`;
}

/** The service's `GATED_STATE`: the marks probed only for rows older than the latest mark-all (`t.gen`). */
const GATED_STATE = `cross join lateral (select n.is_seen, n.seen_at where n.mark_gen >= t.gen
  union all select s.is_seen, s.seen_at from notification_seen_states(${stateArguments('n.')}) s where n.mark_gen < t.gen) s`;

/** A statement's text and its values in the order its placeholders were written. */
function placeholders() {
  const values: unknown[] = [];
  return { values, p: (value: unknown) => `$${values.push(value)}` };
}

/**
 * The service's `counterTotals`: the counter rows, and the live ones (expired rows not swept yet
 * subtracted) only when some counted row carries an expiry; summed here, types left at zero not listed.
 */
async function counts(userId: string, type: string | null) {
  const { rows } = await bound(
    `select notification_type, unread_count, read_count, expiring_count from notification_counters
         where user_id = $1${type !== null ? ' and notification_type = $2' : ''} order by notification_type`,
    type !== null ? [userId, type] : [userId],
  );
  if (!rows.some((row) => Number(row.expiring_count) > 0)) return sumCounters(rows);
  const { values, p } = placeholders();
  const live = await bound(
    `select notification_type, unread_count, read_count, 0 as expiring_count from (${liveCounters(p, userId, type)}) live order by notification_type`,
    values,
  );
  return sumCounters(live.rows);
}

/** The service's change event (`notification-events.ts` `updated`): every type's counts, published on the event bus (Redis). */
async function publishUpdated(userId: string, ids: string[] | null) {
  const c = await counts(userId, null);
  const message = {
    events: [{ kind: 'updated', notification: null, notificationIds: ids && ids.length <= 500 ? ids : [] }],
    counts: Object.fromEntries(c.byType.map((t) => [t.notificationType, [t.unreadCount, t.readCount]])),
  };
  await redis.publish(`notifications:events:${userId}`, JSON.stringify(message));
}

/** The service's mark by ids (`updateSeen`: the latest mark-all's number taken, the state compared through the marks, inlined), then its event. */
async function markNotificationsRead(userId: string, v: Record<string, unknown>) {
  const isSeen = v.isSeen as boolean;
  const ids = [...new Set((v.notificationIds as string[]).map((id) => id.toLowerCase()))].sort();
  const { rows } = await bound(
    `with ${USER_WRITE_LOCK}
     update notifications set is_seen = $2, seen_at = ${isSeen ? 'now()' : 'null'}, mark_gen = (select c.mark_gen from notification_counters c
       where c.user_id = notifications.user_id and c.notification_type = notifications.notification_type) from serialized
      where user_id = $3 and id = any($4::uuid[])
        and exists (select from notification_seen_states(${stateArguments('notifications.')}) s where s.is_seen <> $5) returning id`,
    [userId, isSeen, userId, `{${ids.join(',')}}`, isSeen],
  );
  if (rows.length)
    await publishUpdated(
      userId,
      rows.map((r) => r.id as string),
    );
  return { success: true, updatedCount: rows.length };
}

/** The service's mark of everything (`updateAllSeen`: `notification_mark_all`), then its event when something changed. */
async function markAllNotificationsRead(userId: string, v: Record<string, unknown>) {
  const type = (v.notificationTypeFilter as string | undefined) || null;
  const { rows } = await bound(
    `select m.updated, m.ids::text[] as ids
       from notification_mark_all($1::uuid, $2::text, $3, $4::pg_snapshot) m`,
    [userId, type, v.isSeen as boolean, null],
  );
  const updatedCount = Number(rows[0]?.updated ?? 0);
  if (updatedCount > 0) await publishUpdated(userId, (rows[0].ids as string[] | null) ?? null);
  return { success: true, updatedCount };
}

/**
 * The service's `selectFeedPage` (notifications/feed.data.ts): the filter's totals (the live
 * counter rows, or counted over the rows with a search term) and the page, each row's state read
 * through the marks, archived and expired rows left out, in one statement.
 */
async function listNotifications(userId: string, v: Record<string, unknown>) {
  const limit = (v.limit as number | undefined) ?? 25;
  let rows = await feedRows(userId, v, limit, false);
  // Some counted row carries an expiry: again, with the expired rows not swept yet out of the totals.
  if (Number(rows[0].expiring) > 0) rows = await feedRows(userId, v, limit, true);
  const found = rows.filter((row) => row.id !== null);
  const last = found[limit - 1];
  return {
    notifications: found.slice(0, limit).map(toNotification),
    total: Number(rows[0].total),
    hasUnread: Number(rows[0].unread) > 0,
    nextCursor: found.length > limit && last ? encodeCursor(userId, last.created_at as Date, last.id as string) : null,
  };
}

/** The page statement of `selectFeedPage`; `live`: its totals from the live counter rows (`liveCounters`). */
async function feedRows(userId: string, v: Record<string, unknown>, limit: number, live: boolean) {
  const type = (v.notificationTypeFilter as string | undefined) || null;
  const seen = (v.seen as boolean | undefined) ?? null;
  const search = (v.searchTerm as string | undefined) || null;
  const after = v.cursor ? decodeCursor(userId, v.cursor as string) : null;
  const { values, p } = placeholders();
  const matching = (withSeen: boolean) => {
    const c = [`user_id = ${p(userId)}`, 'archived_at is null', '(expires_at is null or expires_at > now())'];
    if (type !== null) c.push(`notification_type = ${p(type)}`);
    if (withSeen && seen !== null) c.push(`s.is_seen = ${p(seen)}`);
    return c.join(' and ');
  };
  const counters = () =>
    live
      ? `(${liveCounters(p, userId, type)}) live`
      : `notification_counters where user_id = ${p(userId)}${type !== null ? ` and notification_type = ${p(type)}` : ''}`;
  if (search !== null) return searchRows(userId, { type, seen, search, after }, limit);
  const totals = `select coalesce(sum(${seen === null ? 'unread_count + read_count' : seen ? 'read_count' : 'unread_count'}), 0)::int as total,
                coalesce(sum(unread_count), 0)::int as unread, coalesce(max(mark_gen), 0) as gen,
                ${live ? '0' : 'coalesce(sum(expiring_count), 0)'} as expiring
           from ${counters()}`;
  const page = matching(true) + (after ? ` and (created_at, id) < (${p(after.createdAt)}, ${p(after.id)})` : '');
  const { rows } = await bound(
    `with t as (${totals})
     select t.total, t.unread, t.expiring, n.* from t left join lateral (
       select ${STATE_COLUMNS} from notifications n ${GATED_STATE} where ${page}
        order by created_at desc, id desc limit least(${limit + 1}, t.total)) n on true
      order by n.created_at desc, n.id desc`,
    values,
  );
  return rows;
}

/**
 * The service's `searchRows`: a small feed's rows all read (values the planner does not see, planned once), a larger
 * one's searched again through the trigram indexes; the matching rows and their state once, counted and sorted.
 */
async function searchRows(
  userId: string,
  f: { type: string | null; seen: boolean | null; search: string; after: { createdAt: Date; id: string } | null },
  limit: number,
) {
  const pattern = likePattern(f.search);
  const statement = (scanned: boolean) => {
    const { values, p } = placeholders();
    const value = (v: unknown, as: string) => (scanned ? `(select ${p(v)}::${as})` : p(v));
    const rows = () =>
      [`user_id = ${value(userId, 'uuid')}`, 'archived_at is null', '(expires_at is null or expires_at > now())']
        .concat(f.type !== null ? [`notification_type = ${value(f.type, 'text')}`] : [])
        .join(' and ');
    const term = () => `(title ilike ${value(pattern, 'text')} escape '\\' or body ilike ${value(pattern, 'text')} escape '\\')`;
    const seenIs = () => (f.seen === null ? 'true' : `is_seen = ${p(f.seen)}`);
    const m = scanned
      ? `c as (select (select coalesce(sum(unread_count + read_count), 0) <= 1000 from notification_counters
           where user_id = ${p(userId)}${f.type !== null ? ` and notification_type = ${p(f.type)}` : ''}) as scan),
      m as (select ${STATE_COLUMNS} from (select * from notifications where ${rows()} and (select scan from c) offset 0) n ${STATE} where ${term()})`
      : `m as (select ${STATE_COLUMNS} from notifications n ${STATE} where ${rows()} and ${term()})`;
    const text = `with ${m},
      t as (select count(*) filter (where ${seenIs()})::int as total, count(*) filter (where not is_seen)::int as unread, 0 as expiring,
                   ${scanned ? '(select scan from c)' : 'true'} as scanned from m)
      select t.total, t.unread, t.expiring, t.scanned, n.* from t left join lateral (
        select * from m where ${seenIs()}${f.after ? ` and (created_at, id) < (${p(f.after.createdAt)}, ${p(f.after.id)})` : ''}
         order by created_at desc, id desc limit least(${limit + 1}, t.total)) n on true
       order by n.created_at desc, n.id desc`;
    return bound(text, values);
  };
  const { rows } = await statement(true);
  return rows[0]?.scanned !== false ? rows : (await statement(false)).rows;
}

async function gateway(req: IncomingMessage, res: ServerResponse) {
  const token = bearer(req);
  if (!token?.startsWith('gk_')) throw new HttpError(401, 'invalid_key');
  const hash = sha256(token);
  // The service's credential stage: the lookup and the window's point in parallel, then the body.
  const [key, decision] = await Promise.all([
    keptKey(hash, () => gatewayKey(hash)),
    consumeWindow(`gateway:${hash.slice(0, 32)}`, GATEWAY_LIMIT),
  ]);
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
