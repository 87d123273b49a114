import { randomUUID } from 'node:crypto';
import type { Em } from '../infra/database/orm.js';
import { empty, join, raw, inUnitOfWork, sql, type Db, type Statement } from '../infra/database/sql.js';
import { pgTextArray } from '../common/pg-array.js';
import type { KeysetPosition } from '../common/keyset-page.js';
import type { DbTimestamp } from '../common/to-date.js';

/** Every statement on the feed's tables, on the pool: listing never pays for ORM entity tracking. */

export interface NotificationView {
  id: string;
  notificationType: string;
  isSeen: boolean;
  title: string;
  body: string;
  /** Timestamps stay as the driver gives them until the DateTime scalar writes them. */
  createdAt: DbTimestamp;
  seenAt: DbTimestamp | null;
  contactId: string | null;
  dealId: string | null;
  noteId: string | null;
  replyId: string | null;
  taskId: string | null;
  callId: string | null;
  actionType: string | null;
  actionTargetId: string | null;
  archivedAt: DbTimestamp | null;
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
  /** true: only archived rows; false: only rows that are not. */
  archived: boolean;
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
  /** Deleted once past (and never shown from then on); null: kept as long as the retention allows. */
  expiresAt?: Date | null;
}

const INSERTED = `id, notification_type, is_seen, title, body, created_at, seen_at,
  contact_id, deal_id, note_id, reply_id, task_id, call_id, action_type, action_target_id`;
const INSERTED_COLUMNS = raw(INSERTED);
/** A row as callers see it: `n` the row, `s` its state through the user's mark-alls (`STATE`). */
const COLUMNS = raw(`n.id, n.notification_type, s.is_seen, n.title, n.body, n.created_at, s.seen_at,
  n.contact_id, n.deal_id, n.note_id, n.reply_id, n.task_id, n.call_id, n.action_type, n.action_target_id, n.archived_at`);

/**
 * Whether a row is read: its own state unless a later mark-all covers it. A join, not a call per
 * row, so PostgreSQL inlines it (see the read marks migration).
 */
const stateArguments = (row: string) =>
  ['user_id', 'notification_type', 'inserted_xid', 'mark_gen', 'archived_at', 'is_seen', 'seen_at']
    .map((column) => `${row}${column}`)
    .join(', ');
const seenState = (row: string) => raw(`notification_seen_state(${stateArguments(row)})`);
const STATE = raw(`cross join lateral notification_seen_states(${stateArguments('n.')}) s`);
/** `STATE` for a page: rows marked since the latest mark-all (`t.gen`) skip the marks probe. */
const GATED_STATE = raw(`cross join lateral (select n.is_seen, n.seen_at where n.mark_gen >= t.gen
  union all select s.is_seen, s.seen_at from notification_seen_states(${stateArguments('n.')}) s where n.mark_gen < t.gen) s`);
/** The updated row's state as `s`, for a subquery of an update's condition (inlined, as `STATE`). */
const rowState = raw(`notification_seen_states(${stateArguments('notifications.')}) s`);

interface NotificationRow {
  id: string;
  notification_type: string;
  is_seen: boolean;
  title: string;
  body: string;
  created_at: DbTimestamp;
  seen_at: DbTimestamp | null;
  contact_id: string | null;
  deal_id: string | null;
  note_id: string | null;
  reply_id: string | null;
  task_id: string | null;
  call_id: string | null;
  action_type: string | null;
  action_target_id: string | null;
  archived_at: DbTimestamp | null;
}

function toNotification(row: NotificationRow): NotificationView {
  return {
    id: row.id,
    notificationType: row.notification_type,
    isSeen: row.is_seen,
    title: row.title,
    body: row.body,
    createdAt: row.created_at,
    seenAt: row.seen_at,
    contactId: row.contact_id,
    dealId: row.deal_id,
    noteId: row.note_id,
    replyId: row.reply_id,
    taskId: row.task_id,
    callId: row.call_id,
    actionType: row.action_type,
    actionTargetId: row.action_target_id,
    archivedAt: row.archived_at,
  };
}

const likePattern = (term: string) => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** An expired row is never shown, from its `expires_at` on, whether or not the sweep has deleted it yet. */
const NOT_EXPIRED = raw('(expires_at is null or expires_at > now())');

const andTypeIs = (column: string, type: string | null) => (type !== null ? sql` and ${raw(column)} = ${type}` : empty);

/**
 * Counter rows, minus expired rows not swept yet. A union with the scalar state function, not a
 * join: the inlined state's subqueries were slower to plan than to run.
 */
const liveCounters = (userId: string, type: string | null) =>
  sql`select notification_type, unread_count, read_count, mark_gen from notification_counters where user_id = ${userId}${andTypeIs('notification_type', type)}
      union all
      select n.notification_type, -count(*) filter (where not s.is_seen), -count(*) filter (where s.is_seen), 0
        from notifications n cross join lateral ${seenState('n.')} s
       where n.user_id = ${userId} and n.expires_at <= now() and n.archived_at is null${andTypeIs('n.notification_type', type)}
       group by n.notification_type`;

/** How a statement passes a value: bound as a parameter, or `unseen`. */
type Bind = (value: unknown, type: string) => Statement;
const bound: Bind = (value) => sql`${value}`;
/**
 * A value read by an InitPlan, which the planner does not look into: custom plans then cost what
 * the generic plan costs, so PostgreSQL keeps the generic one and stops planning on every call.
 */
const unseen: Bind = (value, type) => sql`(select ${value}::${raw(type)})`;

/** The user's rows matching a filter but its search term (the seen filter too, unless `withSeen` is false). */
function matching(userId: string, filter: FeedConditions, withSeen = true, bind = bound): Statement {
  const conditions = [
    sql`user_id = ${bind(userId, 'uuid')}`,
    raw(filter.archived ? 'archived_at is not null' : 'archived_at is null'),
    NOT_EXPIRED,
  ];
  if (filter.type !== null) conditions.push(sql`notification_type = ${bind(filter.type, 'text')}`);
  if (withSeen && filter.seen !== null) conditions.push(sql`s.is_seen = ${filter.seen}`);
  return join(conditions, ' and ');
}

export interface NotificationTypeCounts extends NotificationCounts {
  notificationType: string;
}

export interface NotificationCountsByType extends NotificationCounts {
  byType: NotificationTypeCounts[];
}

interface CounterRow {
  notification_type: string;
  unread_count: number;
  read_count: number;
}

/**
 * Badge numbers from the trigger-kept counter rows: constant cost at any feed size; expired rows
 * not swept yet are subtracted in the same statement (`liveCounters`) only when some row expires.
 */
export async function counterTotals(db: Db, userId: string, type: string | null): Promise<NotificationCountsByType> {
  let rows = await db.rows<CounterRow & { expiring_count: number }>(
    sql`select notification_type, unread_count, read_count, expiring_count from notification_counters
         where user_id = ${userId}${andTypeIs('notification_type', type)} order by notification_type`,
  );
  if (rows.some((row) => Number(row.expiring_count) > 0))
    rows = await db.rows(
      sql`select notification_type, unread_count, read_count, 0 as expiring_count from (${liveCounters(userId, type)}) live order by notification_type`,
    );
  // Sorted by type, so a type's expired rows follow its counter row.
  const merged: NotificationTypeCounts[] = [];
  for (const row of rows) {
    const last = merged.at(-1);
    const unreadCount = Number(row.unread_count);
    const readCount = Number(row.read_count);
    if (last?.notificationType === row.notification_type) {
      last.unreadCount += unreadCount;
      last.readCount += readCount;
    } else merged.push({ notificationType: row.notification_type, unreadCount, readCount });
  }
  return sumCounterRows(merged);
}

/** Totals and `byType` from per-type counter rows sorted by type, as getNotificationCounts answers them. */
export function sumCounterRows(rows: Iterable<NotificationTypeCounts>): NotificationCountsByType {
  const counts: NotificationCountsByType = { unreadCount: 0, readCount: 0, byType: [] };
  for (const row of rows) {
    counts.unreadCount += row.unreadCount;
    counts.readCount += row.readCount;
    if (row.unreadCount !== 0 || row.readCount !== 0) counts.byType.push(row);
  }
  return counts;
}

type PageRow = NotificationRow & { total: number; unread: number; expiring: number };

export interface FeedRows {
  rows: NotificationView[];
  total: number;
  hasUnread: boolean;
}

/**
 * A keyset page (created_at desc, id desc) and its totals in one round trip. The limit is in the
 * text so the planner knows how few rows it needs.
 */
export async function selectFeedPage(
  db: Db,
  userId: string,
  filter: FeedConditions,
  after: KeysetPosition | null,
  limit: number,
): Promise<FeedRows> {
  const page = (live: boolean) =>
    filter.search !== null
      ? searchRows(db, userId, { ...filter, search: filter.search }, after, limit)
      : db.rows<PageRow>(
          sql`with t as (${totals(userId, filter, live)})
        select t.total, t.unread, t.expiring, n.* from t left join lateral (
          select ${COLUMNS} from notifications n ${GATED_STATE}
           where ${matching(userId, filter)}${keysetAfter(after)}
           order by created_at desc, id desc limit least(${raw(String(limit))}, t.total)) n on true
         order by n.created_at desc, n.id desc`,
        );
  let rows = await page(false);
  // Some counted row carries an expiry: again, with the expired rows not swept yet out of the totals.
  if (Number(rows[0]?.expiring ?? 0) > 0) rows = await page(true);
  return {
    rows: rows.filter((row) => row.id !== null).map(toNotification),
    total: Number(rows[0]?.total ?? 0),
    hasUnread: Number(rows[0]?.unread ?? 0) > 0,
  };
}

const keysetAfter = (after: KeysetPosition | null) => (after ? sql` and (created_at, id) < (${after.createdAt}, ${after.id})` : empty);

/**
 * Feeds of up to this many rows (of the type filtered on) are searched by reading all their rows;
 * larger ones through the trigram indexes, whose cost grows with the whole table's matches.
 */
const SEARCH_SCAN_ROWS_MAX = 1000;

const searchTerm = (search: string, bind: Bind) => {
  const pattern = likePattern(search);
  return sql`(title ilike ${bind(pattern, 'text')} escape '\\' or body ilike ${bind(pattern, 'text')} escape '\\')`;
};

/**
 * A small feed's search reads all its rows, in a statement whose values are `unseen`, so it is
 * planned once per connection. A larger feed's (`scanned` false: nothing read yet), and any archived
 * search (no counter row says how many rows that would read), go through the trigram indexes,
 * planned for their values on every call.
 */
async function searchRows(
  db: Db,
  userId: string,
  filter: FeedConditions & { search: string },
  after: KeysetPosition | null,
  limit: number,
) {
  if (!filter.archived) {
    const small = sql`(select coalesce(sum(unread_count + read_count), 0) <= ${raw(String(SEARCH_SCAN_ROWS_MAX))}
           from notification_counters where user_id = ${userId}${andTypeIs('notification_type', filter.type)})`;
    // `offset 0` keeps the term out of the scan, so the planner cannot take the trigram indexes for it.
    const scanned = sql`c as (select ${small} as scan),
      m as (select ${COLUMNS} from (select * from notifications where ${matching(userId, filter, false, unseen)} and (select scan from c) offset 0) n
             ${STATE} where ${searchTerm(filter.search, unseen)})`;
    const rows = await db.rows<PageRow & { scanned: boolean }>(searchPage(scanned, raw('(select scan from c)'), filter, after, limit));
    if (rows[0]?.scanned !== false) return rows;
  }
  const indexed = sql`m as (select ${COLUMNS} from notifications n ${STATE} where ${matching(userId, filter, false)} and ${searchTerm(filter.search, bound)})`;
  return db.rows<PageRow>(searchPage(indexed, raw('true'), filter, after, limit));
}

/** A search page: its totals need every matching row (`m`), so they are read once, then counted and sorted. */
function searchPage(
  matches: Statement,
  scanned: Statement,
  filter: FeedConditions,
  after: KeysetPosition | null,
  limit: number,
): Statement {
  const seenIs = filter.seen === null ? raw('true') : sql`is_seen = ${filter.seen}`;
  return sql`with ${matches},
      t as (select count(*) filter (where ${seenIs})::int as total, count(*) filter (where not is_seen)::int as unread, 0 as expiring,
                   ${scanned} as scanned from m)
      select t.total, t.unread, t.expiring, t.scanned, n.* from t left join lateral (
        select * from m where ${seenIs}${keysetAfter(after)}
         order by created_at desc, id desc limit least(${raw(String(limit))}, t.total)) n on true
       order by n.created_at desc, n.id desc`;
}

/** `total` and `unread` from the counter rows, or counted over archived rows, which counters skip. */
function totals(userId: string, filter: FeedConditions, live: boolean): Statement {
  // Counters skip archived rows, and no mark covers one (its state was written into it): gate 0.
  if (filter.archived)
    return sql`select count(*) filter (where ${filter.seen === null ? raw('true') : sql`s.is_seen = ${filter.seen}`})::int as total,
                      count(*) filter (where not s.is_seen)::int as unread, ${filter.archived ? raw('0') : latestMarkGen(userId, filter.type)} as gen,
                      0 as expiring
                 from notifications n ${STATE} where ${matching(userId, filter, false)}`;
  const total = raw(filter.seen === null ? 'unread_count + read_count' : filter.seen ? 'read_count' : 'unread_count');
  const counters = live
    ? sql`(${liveCounters(userId, filter.type)}) live`
    : sql`notification_counters where user_id = ${userId}${andTypeIs('notification_type', filter.type)}`;
  return sql`select coalesce(sum(${total}), 0)::int as total, coalesce(sum(unread_count), 0)::int as unread,
                    coalesce(max(mark_gen), 0) as gen, ${raw(live ? '0' : 'coalesce(sum(expiring_count), 0)')} as expiring
               from ${counters}`;
}

/** The latest mark-all's number among the user's counter rows (of one type): no mark covers a row at or past it. */
const latestMarkGen = (userId: string, type: string | null) =>
  sql`(select coalesce(max(g.mark_gen), 0) from notification_counters g
        where g.user_id = ${userId}${andTypeIs('g.notification_type', type)})`;

/**
 * Every writer of a user's rows takes the user's advisory lock first, so all lock in one order
 * (user → rows → counter rows) and cannot deadlock (docs/architecture.md, Data).
 */
const userWriteLock = (userId: string) =>
  sql`serialized as materialized (select pg_advisory_xact_lock(${raw(String(0x6e6f7466))}, hashtext(${userId}::text)))`;

/**
 * A row marked by id or archived takes the latest mark-all's number: its own state is its state
 * until a later mark-all covers it. Counter rows change only under the user's lock, held here.
 */
const currentMarkGen = raw(`(select c.mark_gen from notification_counters c
  where c.user_id = notifications.user_id and c.notification_type = notifications.notification_type)`);

/** `now()` when marking read, null when marking unread. */
const seenAtFor = (isSeen: boolean) => raw(isSeen ? 'now()' : 'null');

/** Sets the seen state of the user's rows among `ids`; returns only the ids that changed, so counts stay exact under races. */
export async function updateSeen(db: Db, userId: string, ids: readonly string[], isSeen: boolean): Promise<string[]> {
  const rows = await db.rows<{ id: string }>(
    sql`with ${userWriteLock(userId)}
        update notifications set is_seen = ${isSeen}, seen_at = ${seenAtFor(isSeen)}, mark_gen = ${currentMarkGen} from serialized
         where user_id = ${userId} and id = any(${pgTextArray(ids)}::uuid[])
           and exists (select from ${rowState} where s.is_seen <> ${isSeen}) returning id`,
  );
  return rows.map((row) => row.id);
}

/** Archives (or restores) the user's rows among `ids` under the user lock; returns the ids that changed. */
export async function updateArchived(db: Db, userId: string, ids: readonly string[], archived: boolean): Promise<string[]> {
  const rows = await db.rows<{ id: string }>(
    sql`with ${userWriteLock(userId)}
        update notifications set archived_at = ${raw(archived ? 'now()' : 'null')}, mark_gen = ${currentMarkGen},
               (is_seen, seen_at) = (select s.is_seen, s.seen_at from ${seenState('')} s) from serialized
         where user_id = ${userId} and id = any(${pgTextArray(ids)}::uuid[]) and archived_at is ${raw(archived ? 'null' : 'not null')} returning id`,
  );
  return rows.map((row) => row.id);
}

/** A mark's changed ids are listed up to this many; past it, `notificationIds` is null (the count says how many). */
const CHANGED_IDS_LISTED_MAX = 500;

export interface FeedMarkOutcome {
  updatedCount: number;
  notificationIds: string[] | null;
}

/** The database's snapshot now, so a mark-all that waits for its turn covers what existed when it arrived. */
export async function currentSnapshot(db: Db): Promise<string> {
  const rows = await db.rows<{ snapshot: string }>(sql`select pg_current_snapshot()::text as snapshot`);
  return rows[0].snapshot;
}

/**
 * Marks every unarchived row (of one type) at constant cost: records a read mark per type and
 * moves the counters, rewriting no row. Covers the snapshot `asOf`, not timestamps, since a
 * backfill may set them in the past.
 */
export async function updateAllSeen(
  db: Db,
  userId: string,
  mark: { type: string | null; isSeen: boolean; asOf: string | null },
): Promise<FeedMarkOutcome> {
  const { type, isSeen, asOf } = mark;
  const rows = await db.rows<{ updated: number | string; ids: string[] | null }>(
    sql`select m.updated, m.ids::text[] as ids
          from notification_mark_all(${userId}::uuid, ${type}::text, ${isSeen}, ${asOf}::pg_snapshot) m`,
  );
  const updatedCount = Number(rows[0]?.updated ?? 0);
  const ids = rows[0]?.ids ?? null;
  return { updatedCount, notificationIds: ids && ids.length <= CHANGED_IDS_LISTED_MAX ? ids : null };
}

/** Backdated rows already read (demo data): read when they were created. */
export async function markSeenAtCreation(em: Em, userId: string, ids: readonly string[]): Promise<void> {
  await inUnitOfWork(
    em,
    sql`with ${userWriteLock(userId)}
        update notifications set is_seen = true, seen_at = created_at, mark_gen = ${currentMarkGen} from serialized
         where user_id = ${userId} and id = any(${pgTextArray(ids)}::uuid[])`,
  );
}

/** A catalog entry: the exact string callers pass as `notificationTypeFilter`. */
export interface NotificationTypeEntry {
  notificationType: string;
  label: string;
  category: string;
}

export function notificationTypeCatalog(db: Db): Promise<NotificationTypeEntry[]> {
  return db.rows<NotificationTypeEntry>(
    sql`select notification_type as "notificationType", label, category from notification_types order by notification_type`,
  );
}

export async function knownNotificationTypes(em: Em, types: readonly string[]): Promise<Set<string>> {
  const rows = await inUnitOfWork<{ notification_type: string }[]>(
    em,
    sql`select notification_type from notification_types where notification_type = any(${pgTextArray(types)}::text[])`,
  );
  return new Set(rows.map((t) => t.notification_type));
}

/** Inserts a batch in one statement; the counter trigger updates badge numbers in the same transaction. */
export async function insertNotifications(em: Em, inputs: readonly NewNotification[]): Promise<NotificationView[]> {
  const views: NotificationView[] = inputs.map((input) => ({
    id: randomUUID(),
    notificationType: input.notificationType,
    isSeen: false,
    title: input.title,
    body: input.body,
    createdAt: input.createdAt,
    seenAt: null,
    contactId: input.contactId ?? null,
    dealId: input.dealId ?? null,
    noteId: input.noteId ?? null,
    replyId: input.replyId ?? null,
    taskId: input.taskId ?? null,
    callId: input.callId ?? null,
    actionType: input.actionType ?? null,
    actionTargetId: input.actionTargetId ?? null,
    archivedAt: null,
  }));
  const values = views.map(
    (n, i) =>
      sql`(${inputs[i].userId}, ${n.id}, ${n.notificationType}, false, ${n.title}, ${n.body}, ${n.createdAt}, null, ${n.contactId},
           ${n.dealId}, ${n.noteId}, ${n.replyId}, ${n.taskId}, ${n.callId}, ${n.actionType}, ${n.actionTargetId}, ${inputs[i].expiresAt ?? null})`,
  );
  await inUnitOfWork(em, sql`insert into notifications (user_id, ${INSERTED_COLUMNS}, expires_at) values ${join(values)}`);
  return views;
}

export interface SweptRows {
  userId: string;
  deleted: number;
}

/** One bounded batch of the expiry and retention sweep, only while this instance holds its lease. */
export async function sweepBatch(db: Db, retentionCutoff: Date | null, limit: number): Promise<SweptRows[]> {
  const rows = await db.rows<{ swept_user: string; deleted: number | string }>(
    sql`select swept_user, deleted from notification_sweep(${retentionCutoff?.toISOString() ?? null}::timestamptz, ${limit}::int)`,
  );
  return rows.map((row) => ({ userId: row.swept_user, deleted: Number(row.deleted) }));
}

/** What one batch of the read marks' compaction did. */
export interface CompactedMarks {
  marksDeleted: number;
  rowsFolded: number;
  /** Queued pairs (user, type) it found with nothing left to do. */
  pairsSettled: number;
}

/** One bounded batch of `notification_compact_marks` over the queued pairs (its migrations say which marks go); a no-op without the sweep's lease. */
export async function compactMarksBatch(db: Db, limit: number): Promise<CompactedMarks> {
  const rows = await db.rows<{ marks_deleted: number | string; rows_folded: number | string; pairs_settled: number | string }>(
    sql`select marks_deleted, rows_folded, pairs_settled from notification_compact_marks(${limit}::int)`,
  );
  return {
    marksDeleted: Number(rows[0]?.marks_deleted ?? 0),
    rowsFolded: Number(rows[0]?.rows_folded ?? 0),
    pairsSettled: Number(rows[0]?.pairs_settled ?? 0),
  };
}
