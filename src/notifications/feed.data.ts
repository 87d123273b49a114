import type { Em } from '../infra/database/orm.js';
import type { Sql } from '../infra/database/sql.js';
import { pgTextArray } from '../common/pg-array.js';
import type { FeedPosition } from './cursor.js';
import { Notification, NotificationType } from './notification.entity.js';
import { toDate } from '../common/to-date.js';
import { GATEWAY_KEY_OWNER, type GatewayKeyOwnerColumns } from '../auth/api-keys.data.js';

/**
 * Every read and write of `notifications`, `notification_types` and `notification_counters`.
 * The feed's hot paths (pages, counts, marks) run on the pool (`Sql`) and track no entities.
 */

/** A feed row as the API shows it: a plain object, so listing never pays for ORM entity tracking. */
export interface NotificationView {
  id: string;
  notificationType: string;
  isSeen: boolean;
  title: string;
  body: string;
  createdAt: Date;
  seenAt: Date | null;
  contactId: string | null;
  dealId: string | null;
  noteId: string | null;
  replyId: string | null;
  taskId: string | null;
  callId: string | null;
  actionType: string | null;
  actionTargetId: string | null;
}

export interface NotificationCounts {
  unreadCount: number;
  readCount: number;
}

/** A validated filter: null means not filtered on. */
export interface FeedConditions {
  type: string | null;
  seen: boolean | null;
  search: string | null;
}

/** A row to insert; the service fills in `createdAt` when its caller did not. */
export interface NewNotification {
  userId: string;
  notificationType: string;
  title: string;
  body: string;
  contactId?: string | null;
  dealId?: string | null;
  noteId?: string | null;
  replyId?: string | null;
  taskId?: string | null;
  callId?: string | null;
  actionType?: string | null;
  actionTargetId?: string | null;
  createdAt: Date;
}

const COLUMNS = `id, notification_type, is_seen, title, body, created_at, seen_at,
  contact_id, deal_id, note_id, reply_id, task_id, call_id, action_type, action_target_id`;

interface NotificationRow {
  id: string;
  notification_type: string;
  is_seen: boolean;
  title: string;
  body: string;
  created_at: Date | string;
  seen_at: Date | string | null;
  contact_id: string | null;
  deal_id: string | null;
  note_id: string | null;
  reply_id: string | null;
  task_id: string | null;
  call_id: string | null;
  action_type: string | null;
  action_target_id: string | null;
}

function toNotification(row: NotificationRow): NotificationView {
  return {
    id: row.id,
    notificationType: row.notification_type,
    isSeen: row.is_seen,
    title: row.title,
    body: row.body,
    createdAt: toDate(row.created_at),
    seenAt: row.seen_at === null ? null : toDate(row.seen_at),
    contactId: row.contact_id,
    dealId: row.deal_id,
    noteId: row.note_id,
    replyId: row.reply_id,
    taskId: row.task_id,
    callId: row.call_id,
    actionType: row.action_type,
    actionTargetId: row.action_target_id,
  };
}

const likePattern = (term: string) => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Whose rows a statement reads: a user's (bound), or those of the owner of the gateway key the
 * statement looked up in its `k` CTE (`GATEWAY_KEY_OWNER`), when it folds that lookup in.
 */
const KEY_OWNER = Symbol('the owner of the key in k');
type Owner = string | typeof KEY_OWNER;

/** Builds `where` conditions shared by the page, the total and hasUnread queries. */
function whereClause(owner: Owner, f: FeedConditions) {
  const conditions = [owner === KEY_OWNER ? 'user_id = k.key_user_id' : 'user_id = ?'];
  const params: unknown[] = owner === KEY_OWNER ? [] : [owner];
  if (f.type !== null) {
    conditions.push('notification_type = ?');
    params.push(f.type);
  }
  if (f.seen !== null) {
    conditions.push('is_seen = ?');
    params.push(f.seen);
  }
  if (f.search !== null) {
    conditions.push(`(title ilike ? escape '\\' or body ilike ? escape '\\')`);
    params.push(likePattern(f.search), likePattern(f.search));
  }
  return { conditions, params };
}

/** One type's badge numbers. */
export interface NotificationTypeCounts extends NotificationCounts {
  notificationType: string;
}

/** The totals and, per type with rows, the same numbers split out. */
export interface NotificationCountsByType extends NotificationCounts {
  byType: NotificationTypeCounts[];
}

/**
 * Badge numbers from the counter rows (kept by triggers): constant cost at any feed size. One
 * statement reads the caller's counter rows (one per type, 14 at most with the default catalog),
 * and the totals are their sums, so `byType` costs no second round trip.
 */
export async function counterTotals(sql: Sql, userId: string, type: string | null): Promise<NotificationCountsByType> {
  const rows = await sql.execute<CounterRow[]>(
    `select notification_type, unread_count, read_count from notification_counters
      where user_id = ?${type !== null ? ' and notification_type = ?' : ''} order by notification_type`,
    type !== null ? [userId, type] : [userId],
  );
  return countsOfRows(rows);
}

interface CounterRow {
  notification_type: string;
  unread_count: number;
  read_count: number;
}

/** Counter rows (sorted by type; those of a left join that found none have a null type) as badge numbers. */
export function countsOfRows(rows: readonly { [K in keyof CounterRow]: CounterRow[K] | null }[]): NotificationCountsByType {
  const counters: NotificationTypeCounts[] = [];
  for (const row of rows) {
    if (row.notification_type === null) continue;
    counters.push({ notificationType: row.notification_type, unreadCount: Number(row.unread_count), readCount: Number(row.read_count) });
  }
  return sumCounterRows(counters);
}

/**
 * `counterTotals` for the owner of the gateway key with this hash, with the key lookup folded in
 * (`auth/key-preload.ts`): the key's columns on every row, no row for an unknown or revoked key,
 * and one row without counters for an owner who has none.
 */
export function counterRowsOfKey(sql: Sql, keyHash: string, type: string | null) {
  return sql.execute<(GatewayKeyOwnerColumns & { [K in keyof CounterRow]: CounterRow[K] | null })[]>(
    `with k as (${GATEWAY_KEY_OWNER})
     select k.*, c.notification_type, c.unread_count, c.read_count
       from k left join notification_counters c on c.user_id = k.key_user_id${type !== null ? ' and c.notification_type = ?' : ''}
      order by c.notification_type`,
    type !== null ? [keyHash, type] : [keyHash],
  );
}

/**
 * Totals and `byType` from per-type counter rows sorted by type, as getNotificationCounts answers
 * them: a row left at zero (its rows deleted) is a type without rows.
 */
export function sumCounterRows(rows: Iterable<NotificationTypeCounts>): NotificationCountsByType {
  const counts: NotificationCountsByType = { unreadCount: 0, readCount: 0, byType: [] };
  for (const row of rows) {
    counts.unreadCount += row.unreadCount;
    counts.readCount += row.readCount;
    if (row.unreadCount !== 0 || row.readCount !== 0) counts.byType.push(row);
  }
  return counts;
}

/**
 * The page of `limit` matching rows after `after`, newest first (keyset on created_at desc, id
 * desc). One row past the page is read to tell whether there is a next one.
 */
export async function selectFeedPage(sql: Sql, userId: string, f: FeedConditions, after: FeedPosition | null, limit: number) {
  const page = pageQuery(userId, f, after, limit);
  return feedPageOf(await sql.execute<NotificationRow[]>(page.text, page.params), limit);
}

/** The page's statement: `limit + 1` rows, to tell whether there is a next page. */
function pageQuery(owner: Owner, f: FeedConditions, after: FeedPosition | null, limit: number) {
  const page = whereClause(owner, f);
  if (after) {
    page.conditions.push('(created_at, id) < (?, ?)');
    page.params.push(after.createdAt, after.id);
  }
  return {
    text: `select ${COLUMNS} from notifications where ${page.conditions.join(' and ')}
      order by created_at desc, id desc limit ${limit + 1}`,
    params: page.params,
  };
}

function feedPageOf(rows: NotificationRow[], limit: number) {
  return { notifications: rows.slice(0, limit).map(toNotification), more: rows.length > limit };
}

/** The search totals' statement: see `searchTotals`. */
function searchTotalsQuery(owner: Owner, f: FeedConditions) {
  const { conditions, params } = whereClause(owner, { ...f, seen: null });
  return {
    text: `select count(*) filter (where ${f.seen === null ? 'true' : 'is_seen = ?'})::int as total,
            count(*) filter (where not is_seen)::int as unread
       from notifications${owner === KEY_OWNER ? ', k' : ''} where ${conditions.join(' and ')}`,
    params: [...(f.seen === null ? [] : [f.seen]), ...params],
  };
}

/**
 * A page and its `total` and `hasUnread` for the owner of the gateway key with this hash, in one
 * statement with the key lookup folded in (`auth/key-preload.ts`): the key's columns and the
 * totals on every row, then the page's row (null columns for an empty page); no row at all for an
 * unknown or revoked key. The totals come from the counter rows, or from the matching rows with a
 * search term, as `selectFeedPage` and `searchTotals` / `counterTotals` do.
 */
export function feedRowsOfKey(sql: Sql, keyHash: string, f: FeedConditions, after: FeedPosition | null, limit: number) {
  const page = pageQuery(KEY_OWNER, f, after, limit);
  let totals: { text: string; params: unknown[] };
  if (f.search === null) {
    const total = f.seen === null ? 'c.unread_count + c.read_count' : f.seen ? 'c.read_count' : 'c.unread_count';
    totals = {
      text: `select coalesce(sum(${total}), 0)::int as total, coalesce(sum(c.unread_count), 0)::int as unread
               from notification_counters c join k on c.user_id = k.key_user_id${f.type !== null ? ' where c.notification_type = ?' : ''}`,
      params: f.type !== null ? [f.type] : [],
    };
  } else totals = searchTotalsQuery(KEY_OWNER, f);
  return sql.execute<(GatewayKeyOwnerColumns & { total: number; unread: number } & NotificationRow)[]>(
    `with k as (${GATEWAY_KEY_OWNER}), t as (${totals.text})
     select k.*, t.total, t.unread, n.* from k cross join t left join lateral (${page.text}) n on true
      order by n.created_at desc, n.id desc`,
    [keyHash, ...totals.params, ...page.params],
  );
}

/** The page and totals of `feedRowsOfKey`'s rows (for a key that was found: at least one row). */
export function feedOfKeyRows(rows: readonly ({ total: number; unread: number } & NotificationRow)[], limit: number) {
  return {
    ...feedPageOf(
      rows.filter((row) => row.id !== null),
      limit,
    ),
    total: Number(rows[0]?.total ?? 0),
    hasUnread: Number(rows[0]?.unread ?? 0) > 0,
  };
}

/**
 * `total` (all filters) and `hasUnread` (the seen filter ignored) counted over the matching rows
 * themselves, as a search term needs (served by the trigram indexes).
 */
export async function searchTotals(sql: Sql, userId: string, f: FeedConditions) {
  const query = searchTotalsQuery(userId, f);
  const rows = await sql.execute<{ total: number; unread: number }[]>(query.text, query.params);
  return { total: Number(rows[0]?.total ?? 0), hasUnread: Number(rows[0]?.unread ?? 0) > 0 };
}

/**
 * Every writer of a user's existing feed rows starts its statement with this CTE and joins it, so
 * it holds the user's transaction-scoped advisory lock before it locks any row: writers of one
 * user's rows run one at a time, and the order of every lock is the same for all of them
 *
 *   user lock → that user's feed rows (in any order: nobody else holds them) → counter rows
 *
 * (the counter trigger takes its rows sorted by user and type, after the statement's rows, and
 * publishes take only counter rows, in that same order). With no cycle possible, no deadlock is:
 * marks by id with hundreds of ids, marks of a whole feed and publishes race without retries.
 * Rows are locked only where ModifyTable updates them, which happens to joined rows only, so the
 * lock is held before the first row lock whichever join order the planner picks. The class id
 * (first key) keeps these locks apart from any other advisory lock; the second is the user's hash
 * (two users sharing a hash only wait for each other).
 */
const USER_WRITE_LOCK = `serialized as materialized (select pg_advisory_xact_lock(${0x6e6f7466}, hashtext(?::text)))`;

/**
 * Sets the seen state of the user's rows among `ids` (distinct, lower-cased uuids); returns the ids
 * of the rows whose state changed. Only those are touched, so the count and the counters stay exact
 * when marks race: a concurrent mark of the same row re-checks `is_seen` after the first commits.
 */
export async function updateSeen(sql: Sql, userId: string, ids: readonly string[], isSeen: boolean): Promise<string[]> {
  const rows = await sql.execute<{ id: string }[]>(
    `with ${USER_WRITE_LOCK}
     update notifications set is_seen = ?, seen_at = ${isSeen ? 'now()' : 'null'} from serialized
      where user_id = ? and id = any(?::uuid[]) and is_seen <> ? returning id`,
    [userId, isSeen, userId, pgTextArray(ids), isSeen],
  );
  return rows.map((row) => row.id);
}

/** A mark's changed ids are listed up to this many; past it, `notificationIds` is null (the count says how many). */
const CHANGED_IDS_LISTED_MAX = 500;

export interface FeedMarkOutcome {
  updatedCount: number;
  /** The changed rows' ids, or null when more than `CHANGED_IDS_LISTED_MAX` changed. */
  notificationIds: string[] | null;
}

/**
 * The database's snapshot now, as text: which transactions a statement starting now would see.
 * A mark of everything that must wait its turn takes it as it arrives (`updateAllSeen`'s `asOf`).
 */
export async function currentSnapshot(sql: Sql): Promise<string> {
  const rows = await sql.execute<{ snapshot: string }[]>('select pg_current_snapshot()::text as snapshot');
  return rows[0].snapshot;
}

/**
 * Sets the seen state of every row of the user's (of one type, when `type` is set) that is not in
 * it yet, in one statement, hence one transaction, whatever the feed size.
 *
 * Rows published while it runs are untouched: under READ COMMITTED a statement sees the rows
 * committed when it started (its snapshot is taken before it runs, so before it waits for the
 * user's lock or any row), and an UPDATE only ever updates rows its scan found — when one of those
 * was changed meanwhile by a committed mark it re-checks the newest version against the `where`
 * clause (`is_seen = not ?`), but it never adds rows the snapshot did not hold. So the set of rows
 * is fixed when the statement begins, without comparing timestamps a backfill may set in the past.
 * A call that waited for its turn before the statement began passes `asOf`, the snapshot taken
 * when it arrived: rows inserted by a transaction that snapshot does not see are skipped too.
 */
export async function updateAllSeen(
  sql: Sql,
  userId: string,
  mark: { type: string | null; isSeen: boolean; asOf: string | null },
): Promise<FeedMarkOutcome> {
  const { type, isSeen, asOf } = mark;
  const rows = await sql.execute<{ updated: number; ids: string[] | null }[]>(
    `with ${USER_WRITE_LOCK},
     updated as (
       update notifications set is_seen = ?, seen_at = ${isSeen ? 'now()' : 'null'} from serialized
        where user_id = ? and is_seen = ?${type !== null ? ' and notification_type = ?' : ''}${
          asOf !== null ? ' and (inserted_xid is null or pg_visible_in_snapshot(inserted_xid, ?::pg_snapshot))' : ''
        }
        returning id)
     select (select count(*) from updated)::int as updated,
            (select array_agg(id::text) from (select id from updated limit ${CHANGED_IDS_LISTED_MAX + 1}) listed) as ids`,
    [userId, isSeen, userId, !isSeen, ...(type !== null ? [type] : []), ...(asOf !== null ? [asOf] : [])],
  );
  const updatedCount = Number(rows[0]?.updated ?? 0);
  const ids = rows[0]?.ids ?? [];
  return { updatedCount, notificationIds: ids.length <= CHANGED_IDS_LISTED_MAX ? ids : null };
}

/** Backdated rows already read (demo data): read when they were created. */
export async function markSeenAtCreation(em: Em, userId: string, ids: readonly string[]): Promise<void> {
  await em.execute(
    `with ${USER_WRITE_LOCK}
     update notifications set is_seen = true, seen_at = created_at from serialized where user_id = ? and id = any(?::uuid[])`,
    [userId, userId, pgTextArray(ids)],
    'run',
  );
}

export async function notificationTypeCatalog(em: Em): Promise<NotificationType[]> {
  return em.find(NotificationType, {}, { orderBy: { notificationType: 'asc' } });
}

/** The catalog entries among `types`. */
export async function knownNotificationTypes(em: Em, types: readonly string[]): Promise<Set<string>> {
  const rows = await em.execute<{ notification_type: string }[]>(
    `select notification_type from notification_types where notification_type = any(?::text[])`,
    [pgTextArray(types)],
  );
  return new Set(rows.map((t) => t.notification_type));
}

/** Inserts a batch in one statement; the counter trigger updates badge numbers in the same transaction. */
export async function insertNotifications(em: Em, inputs: readonly NewNotification[]): Promise<NotificationView[]> {
  const notifications = inputs.map((input) => em.create(Notification, { ...input, isSeen: false, seenAt: null }));
  await em.flush();
  return notifications.map((n) => ({
    id: n.id,
    notificationType: n.notificationType,
    isSeen: n.isSeen,
    title: n.title,
    body: n.body,
    createdAt: n.createdAt,
    seenAt: n.seenAt ?? null,
    contactId: n.contactId ?? null,
    dealId: n.dealId ?? null,
    noteId: n.noteId ?? null,
    replyId: n.replyId ?? null,
    taskId: n.taskId ?? null,
    callId: n.callId ?? null,
    actionType: n.actionType ?? null,
    actionTargetId: n.actionTargetId ?? null,
  }));
}
