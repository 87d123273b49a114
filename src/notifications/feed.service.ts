import type { Em } from '../infra/database/orm.js';
import type { Db } from '../infra/database/sql.js';
import { isUuid } from '../common/uuid.js';
import { badInput } from '../common/errors.js';
import { keysetPage, pageCursor, pageSize } from '../common/keyset-page.js';
import { toDate } from '../common/to-date.js';
import { inTurn, placeInQueue, type FeedWriter } from './feed-writes.js';
import { existingUserIds } from '../organizations/organizations.data.js';
import { FEED_LISTING } from './cursor.js';
import {
  counterTotals,
  currentSnapshot,
  insertNotifications,
  knownNotificationTypes,
  notificationTypeCatalog,
  selectFeedPage,
  updateAllSeen,
  updateArchived,
  updateSeen,
  type FeedConditions,
  type FeedMarkOutcome,
  type NewNotification,
  type NotificationCountsByType,
  type NotificationTypeEntry,
  type NotificationView,
} from './feed.data.js';

export const FEED_LIMIT = FEED_LISTING.size;
export const SEARCH_TERM_MAX_LENGTH = 200;
export const MARK_IDS_MAX = 500;
export const PUBLISH_MAX = 1000;

export interface FeedFilter {
  /** Exact type; empty ≡ omitted; an unknown type simply matches nothing. */
  notificationTypeFilter?: string | null;
  seen?: boolean | null;
  /** Case-insensitive substring of title or body; `%` and `_` are literal. */
  searchTerm?: string | null;
  /** true: only archived rows; omitted or false: only rows that are not archived. */
  archived?: boolean | null;
}

export interface FeedPage {
  notifications: NotificationView[];
  total: number;
  hasUnread: boolean;
  nextCursor: string | null;
}

function normalizeFilter(filter: FeedFilter): FeedConditions {
  const type = filter.notificationTypeFilter || null;
  const search = filter.searchTerm || null;
  // Characters, not UTF-16 units, as JSON Schema's maxLength counts them.
  if (search !== null && [...search].length > SEARCH_TERM_MAX_LENGTH) {
    throw badInput(`searchTerm must be at most ${SEARCH_TERM_MAX_LENGTH} characters.`, [
      { path: 'searchTerm', message: `must be at most ${SEARCH_TERM_MAX_LENGTH} characters` },
    ]);
  }
  return { type, seen: filter.seen ?? null, search, archived: filter.archived === true };
}

export function countNotifications(db: Db, userId: string, notificationTypeFilter?: string | null): Promise<NotificationCountsByType> {
  return counterTotals(db, userId, notificationTypeFilter || null);
}

type ListFilter = FeedFilter & { limit?: number | null; cursor?: string | null };

/** A page of the caller's feed, newest first, with its totals; its cursors are bound to the caller. */
export async function listNotifications(db: Db, userId: string, filter: ListFilter): Promise<FeedPage> {
  const limit = pageSize(FEED_LISTING, filter.limit);
  const conditions = normalizeFilter(filter);
  const after = pageCursor(FEED_LISTING, userId, filter.cursor);
  const { rows, total, hasUnread } = await selectFeedPage(db, userId, conditions, after, limit + 1);
  const page = keysetPage(userId, rows, limit, (row) => ({ createdAt: toDate(row.createdAt), id: row.id }));
  return { notifications: page.nodes, total, hasUnread, nextCursor: page.nextCursor };
}

/** Marks the caller's own rows; others' and malformed ids are ignored. Returns the ids that changed. */
export async function markNotifications(
  db: Db,
  writer: FeedWriter,
  notificationIds: readonly string[],
  isSeen: boolean,
): Promise<string[]> {
  const ids = callerIds(notificationIds);
  if (ids.length === 0) return [];
  return inTurn(writer, placeInQueue(writer), () => updateSeen(db, writer.userId, ids, isSeen));
}

/** The distinct well-formed ids among at most MARK_IDS_MAX, lower-cased and sorted; malformed ones are ignored. */
function callerIds(notificationIds: readonly string[]): string[] {
  if (notificationIds.length > MARK_IDS_MAX) {
    throw badInput(`notificationIds may hold at most ${MARK_IDS_MAX} ids.`, [
      { path: 'notificationIds', message: `must hold at most ${MARK_IDS_MAX} ids` },
    ]);
  }
  return [...new Set(notificationIds.filter(isUuid).map((id) => id.toLowerCase()))].sort();
}

/** Archives or restores the caller's own rows in the same per-user turn as marks; returns the ids that changed. */
export async function archiveNotifications(
  db: Db,
  writer: FeedWriter,
  notificationIds: readonly string[],
  archived: boolean,
): Promise<string[]> {
  const ids = callerIds(notificationIds);
  if (ids.length === 0) return [];
  return inTurn(writer, placeInQueue(writer), () => updateArchived(db, writer.userId, ids, archived));
}

/** Marks every matching row that existed when the call began (or, if it waited, when it arrived); see `updateAllSeen`. */
export async function markAllNotifications(
  db: Db,
  writer: FeedWriter,
  isSeen: boolean,
  notificationTypeFilter?: string | null,
): Promise<FeedMarkOutcome> {
  const place = placeInQueue(writer);
  const asOf = place.waited ? currentSnapshot(db) : Promise.resolve(null);
  // Awaited only once the turn comes, which a caller that leaves never reaches.
  asOf.catch(() => undefined);
  return inTurn(writer, place, async () =>
    updateAllSeen(db, writer.userId, { type: notificationTypeFilter || null, isSeen, asOf: await asOf }),
  );
}

export function availableNotificationTypes(db: Db): Promise<NotificationTypeEntry[]> {
  return notificationTypeCatalog(db);
}

/** `createdAt` is for backfills; it defaults to now. */
export type PublishNotificationInput = Omit<NewNotification, 'createdAt'> & { createdAt?: Date | null };

export async function publishNotifications(em: Em, inputs: readonly PublishNotificationInput[]): Promise<NotificationView[]> {
  if (inputs.length > PUBLISH_MAX)
    throw badInput(`input may hold at most ${PUBLISH_MAX} notifications.`, [
      { path: 'input', message: `must hold at most ${PUBLISH_MAX} items` },
    ]);
  if (inputs.length === 0) return [];
  const now = Date.now();
  const details: { path: string; message: string }[] = [];
  const [knownTypes, knownUsers] = await Promise.all([
    knownNotificationTypes(
      em,
      inputs.map((i) => i.notificationType),
    ),
    existingUserIds(em, inputs.map((i) => i.userId).filter(isUuid)),
  ]);
  inputs.forEach((input, i) => {
    if (!knownTypes.has(input.notificationType))
      details.push({ path: `input.${i}.notificationType`, message: `is not in the notification type catalog` });
    if (!isUuid(input.userId) || !knownUsers.has(input.userId.toLowerCase()))
      details.push({ path: `input.${i}.userId`, message: 'is not a known user' });
    if (!input.title.trim()) details.push({ path: `input.${i}.title`, message: 'must not be blank' });
    if (input.expiresAt && input.expiresAt.getTime() <= now)
      details.push({ path: `input.${i}.expiresAt`, message: 'must be in the future' });
  });
  if (details.length) throw badInput('Some notifications cannot be published.', details);

  return insertNotifications(
    em,
    inputs.map((input) => ({ ...input, userId: input.userId.toLowerCase(), createdAt: input.createdAt ?? new Date(now) })),
  );
}
