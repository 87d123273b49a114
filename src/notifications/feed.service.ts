import type { Em } from '../infra/database/orm.js';
import type { Sql } from '../infra/database/sql.js';
import { isUuid } from '../common/uuid.js';
import { pgTextArray } from '../common/pg-array.js';
import { badInput } from '../common/errors.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { Notification, NotificationType } from './notification.entity.js';

export const FEED_LIMIT = { default: 25, min: 1, max: 50 } as const;
export const SEARCH_TERM_MAX_LENGTH = 200;
export const MARK_IDS_MAX = 500;
export const PUBLISH_MAX = 1000;

export interface FeedFilter {
  /** Exact type; empty ≡ omitted; an unknown type simply matches nothing. */
  notificationTypeFilter?: string | null;
  seen?: boolean | null;
  /** Case-insensitive substring of title or body; `%` and `_` are literal. */
  searchTerm?: string | null;
}

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

export interface FeedPage {
  notifications: NotificationView[];
  total: number;
  hasUnread: boolean;
  nextCursor: string | null;
}

export interface NotificationCounts {
  unreadCount: number;
  readCount: number;
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

function normalizeFilter(filter: FeedFilter) {
  const type = filter.notificationTypeFilter || null;
  const search = filter.searchTerm || null;
  // Characters, not UTF-16 units, as JSON Schema's maxLength counts them.
  if (search !== null && [...search].length > SEARCH_TERM_MAX_LENGTH) {
    throw badInput(`searchTerm must be at most ${SEARCH_TERM_MAX_LENGTH} characters.`, [{ path: 'searchTerm', message: `must be at most ${SEARCH_TERM_MAX_LENGTH} characters` }]);
  }
  return { type, seen: filter.seen ?? null, search };
}

/** Builds `where` conditions shared by the page, the total and hasUnread queries. */
function whereClause(userId: string, f: { type: string | null; seen: boolean | null; search: string | null }) {
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
export async function countNotifications(sql: Sql, userId: string, notificationTypeFilter?: string | null): Promise<NotificationCounts> {
  const type = notificationTypeFilter || null;
  const rows = await sql.execute<{ unread: number; read: number }[]>(
    `select coalesce(sum(unread_count), 0)::int as unread, coalesce(sum(read_count), 0)::int as read
       from notification_counters where user_id = ?${type !== null ? ' and notification_type = ?' : ''}`,
    type !== null ? [userId, type] : [userId],
  );
  return { unreadCount: Number(rows[0]?.unread ?? 0), readCount: Number(rows[0]?.read ?? 0) };
}

export async function listNotifications(sql: Sql, userId: string, filter: FeedFilter & { limit?: number | null; cursor?: string | null }): Promise<FeedPage> {
  const limit = filter.limit ?? FEED_LIMIT.default;
  if (!Number.isInteger(limit) || limit < FEED_LIMIT.min || limit > FEED_LIMIT.max) {
    throw badInput(`limit must be an integer from ${FEED_LIMIT.min} to ${FEED_LIMIT.max}.`, [{ path: 'limit', message: `must be between ${FEED_LIMIT.min} and ${FEED_LIMIT.max}` }]);
  }
  const f = normalizeFilter(filter);
  const after = filter.cursor ? decodeCursor(userId, filter.cursor) : null;

  const page = whereClause(userId, f);
  if (after) {
    page.conditions.push('(created_at, id) < (?, ?)');
    page.params.push(after.createdAt, after.id);
  }
  const pageQuery = sql.execute<NotificationRow[]>(
    `select ${COLUMNS} from notifications where ${page.conditions.join(' and ')}
      order by created_at desc, id desc limit ${limit + 1}`,
    page.params,
  );

  const [rows, { total, hasUnread }] = await Promise.all([pageQuery, totals(sql, userId, f)]);
  const more = rows.length > limit;
  const notifications = rows.slice(0, limit).map(toNotification);
  const last = notifications[notifications.length - 1];
  return { notifications, total, hasUnread, nextCursor: more && last ? encodeCursor(userId, last) : null };
}

/**
 * `total` and `hasUnread`. Without a search term both come from the counter rows; a search term
 * needs the matching rows themselves (served by the trigram indexes).
 */
async function totals(sql: Sql, userId: string, f: { type: string | null; seen: boolean | null; search: string | null }) {
  if (f.search === null) {
    const counts = await countNotifications(sql, userId, f.type);
    const total = f.seen === null ? counts.unreadCount + counts.readCount : f.seen ? counts.readCount : counts.unreadCount;
    return { total, hasUnread: counts.unreadCount > 0 };
  }
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

/** Marks the caller's own rows; ids of other users, unknown and malformed ids are silently ignored. */
export async function markNotifications(sql: Sql, userId: string, notificationIds: readonly string[], isSeen: boolean): Promise<number> {
  if (notificationIds.length > MARK_IDS_MAX) {
    throw badInput(`notificationIds may hold at most ${MARK_IDS_MAX} ids.`, [{ path: 'notificationIds', message: `must hold at most ${MARK_IDS_MAX} ids` }]);
  }
  const ids = [...new Set(notificationIds.filter(isUuid).map((id) => id.toLowerCase()))].sort();
  if (ids.length === 0) return 0;
  // Only rows whose state changes are touched, so updatedCount and the counters stay exact when
  // marks race: a concurrent mark of the same row re-checks `is_seen` after the first commits.
  const result = await withDeadlockRetry(() =>
    sql.execute<{ affectedRows: number }>(
      `update notifications set is_seen = ?, seen_at = ${isSeen ? 'now()' : 'null'}
        where user_id = ? and id = any(?::uuid[]) and is_seen <> ?`,
      [isSeen, userId, pgTextArray(ids), isSeen],
      'run',
    ),
  );
  return result.affectedRows;
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

export async function availableNotificationTypes(em: Em): Promise<NotificationType[]> {
  return em.find(NotificationType, {}, { orderBy: { notificationType: 'asc' } });
}

export interface PublishNotificationInput {
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
  createdAt?: Date | null;
}

/** Inserts a batch in one statement; the counter trigger updates badge numbers in the same transaction. */
export async function publishNotifications(em: Em, inputs: readonly PublishNotificationInput[]): Promise<NotificationView[]> {
  if (inputs.length > PUBLISH_MAX) throw badInput(`input may hold at most ${PUBLISH_MAX} notifications.`, [{ path: 'input', message: `must hold at most ${PUBLISH_MAX} items` }]);
  if (inputs.length === 0) return [];
  const details: { path: string; message: string }[] = [];
  const [types, users] = await Promise.all([
    em.execute<{ notification_type: string }[]>(`select notification_type from notification_types where notification_type = any(?::text[])`, [pgTextArray(inputs.map((i) => i.notificationType))]),
    em.execute<{ id: string }[]>(`select id from users where id = any(?::uuid[])`, [pgTextArray(inputs.map((i) => i.userId).filter(isUuid))]),
  ]);
  const knownTypes = new Set(types.map((t) => t.notification_type));
  const knownUsers = new Set(users.map((u) => u.id));
  inputs.forEach((input, i) => {
    if (!knownTypes.has(input.notificationType)) details.push({ path: `input.${i}.notificationType`, message: `is not in the notification type catalog` });
    if (!isUuid(input.userId) || !knownUsers.has(input.userId.toLowerCase())) details.push({ path: `input.${i}.userId`, message: 'is not a known user' });
    if (!input.title.trim()) details.push({ path: `input.${i}.title`, message: 'must not be blank' });
  });
  if (details.length) throw badInput('Some notifications cannot be published.', details);

  const now = Date.now();
  const notifications = inputs.map((input) =>
    em.create(Notification, {
      ...input,
      userId: input.userId.toLowerCase(),
      isSeen: false,
      seenAt: null,
      createdAt: input.createdAt ?? new Date(now),
    }),
  );
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
