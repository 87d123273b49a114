import type { Em } from '../infra/database/orm.js';
import type { Sql } from '../infra/database/sql.js';
import { pgTextArray } from '../common/pg-array.js';
import type { FeedPosition } from './cursor.js';
import { Notification, NotificationType } from './notification.entity.js';

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

const toDate = (value: Date | string) => (value instanceof Date ? value : new Date(value));

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

/** Builds `where` conditions shared by the page, the total and hasUnread queries. */
function whereClause(userId: string, f: FeedConditions) {
  const conditions = ['user_id = ?'];
  const params: unknown[] = [userId];
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

/** Badge numbers from the counter rows (kept by triggers): constant cost at any feed size. */
export async function counterTotals(sql: Sql, userId: string, type: string | null): Promise<NotificationCounts> {
  const rows = await sql.execute<{ unread: number; read: number }[]>(
    `select coalesce(sum(unread_count), 0)::int as unread, coalesce(sum(read_count), 0)::int as read
       from notification_counters where user_id = ?${type !== null ? ' and notification_type = ?' : ''}`,
    type !== null ? [userId, type] : [userId],
  );
  return { unreadCount: Number(rows[0]?.unread ?? 0), readCount: Number(rows[0]?.read ?? 0) };
}

/** The user's counter rows, per type: every badge number at once (stream events carry them). */
export async function counterRowsByType(sql: Sql, userId: string): Promise<Map<string, NotificationCounts>> {
  const rows = await sql.execute<{ notification_type: string; unread_count: number; read_count: number }[]>(
    `select notification_type, unread_count, read_count from notification_counters where user_id = ?`,
    [userId],
  );
  return new Map(rows.map((row) => [row.notification_type, { unreadCount: Number(row.unread_count), readCount: Number(row.read_count) }]));
}

/**
 * The page of `limit` matching rows after `after`, newest first (keyset on created_at desc, id
 * desc). One row past the page is read to tell whether there is a next one.
 */
export async function selectFeedPage(sql: Sql, userId: string, f: FeedConditions, after: FeedPosition | null, limit: number) {
  const page = whereClause(userId, f);
  if (after) {
    page.conditions.push('(created_at, id) < (?, ?)');
    page.params.push(after.createdAt, after.id);
  }
  const rows = await sql.execute<NotificationRow[]>(
    `select ${COLUMNS} from notifications where ${page.conditions.join(' and ')}
      order by created_at desc, id desc limit ${limit + 1}`,
    page.params,
  );
  return { notifications: rows.slice(0, limit).map(toNotification), more: rows.length > limit };
}

/**
 * `total` (all filters) and `hasUnread` (the seen filter ignored) counted over the matching rows
 * themselves, as a search term needs (served by the trigram indexes).
 */
export async function searchTotals(sql: Sql, userId: string, f: FeedConditions) {
  const { conditions, params } = whereClause(userId, { ...f, seen: null });
  const seenParams = f.seen === null ? [] : [f.seen];
  const rows = await sql.execute<{ total: number; unread: number }[]>(
    `select count(*) filter (where ${f.seen === null ? 'true' : 'is_seen = ?'})::int as total,
            count(*) filter (where not is_seen)::int as unread
       from notifications where ${conditions.join(' and ')}`,
    [...seenParams, ...params],
  );
  return { total: Number(rows[0]?.total ?? 0), hasUnread: Number(rows[0]?.unread ?? 0) > 0 };
}

/**
 * Sets the seen state of the user's rows among `ids` (distinct, lower-cased uuids); returns the ids
 * of the rows whose state changed. Only those are touched, so the count and the counters stay exact
 * when marks race: a concurrent mark of the same row re-checks `is_seen` after the first commits.
 */
export async function updateSeen(sql: Sql, userId: string, ids: readonly string[], isSeen: boolean): Promise<string[]> {
  const rows = await withDeadlockRetry(() =>
    sql.execute<{ id: string }[]>(
      `update notifications set is_seen = ?, seen_at = ${isSeen ? 'now()' : 'null'}
        where user_id = ? and id = any(?::uuid[]) and is_seen <> ? returning id`,
      [isSeen, userId, pgTextArray(ids), isSeen],
    ),
  );
  return rows.map((row) => row.id);
}

/** Concurrent marks over overlapping ids can deadlock in rare orders; the update is idempotent, so retrying is safe. */
async function withDeadlockRetry<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= attempts || (code !== '40P01' && !/deadlock/i.test(String(error)))) throw error;
    }
  }
}

/** Backdated rows already read (demo data): read when they were created. */
export async function markSeenAtCreation(em: Em, userId: string, ids: readonly string[]): Promise<void> {
  await em.execute(
    `update notifications set is_seen = true, seen_at = created_at where user_id = ? and id = any(?::uuid[])`,
    [userId, pgTextArray(ids)],
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
