import type { Em } from '../infra/database/orm.js';
import type { Sql } from '../infra/database/sql.js';
import { isUuid } from '../common/uuid.js';
import { badInput } from '../common/errors.js';
import { inTurn, placeInQueue, type FeedWriter } from './feed-writes.js';
import { existingUserIds } from '../organizations/organizations.data.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { readKeysetCursor } from '../common/keyset-cursor.js';
import { splitRows, type KeyPreload } from '../auth/key-preload.js';
import type { NotificationType } from './notification.entity.js';
import {
  counterRowsOfKey,
  counterTotals,
  countsOfRows,
  currentSnapshot,
  feedOfKeyRows,
  feedRowsOfKey,
  insertNotifications,
  knownNotificationTypes,
  notificationTypeCatalog,
  searchTotals,
  selectFeedPage,
  updateAllSeen,
  updateSeen,
  type FeedConditions,
  type FeedMarkOutcome,
  type NewNotification,
  type NotificationCountsByType,
  type NotificationView,
} from './feed.data.js';

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
  return { type, seen: filter.seen ?? null, search };
}

/** The caller's badge numbers, in total and per type; an empty type filter counts every type. */
export function countNotifications(sql: Sql, userId: string, notificationTypeFilter?: string | null): Promise<NotificationCountsByType> {
  return counterTotals(sql, userId, notificationTypeFilter || null);
}

type ListFilter = FeedFilter & { limit?: number | null; cursor?: string | null };

/** The limit and the conditions of a listing, checked. */
function listing(filter: ListFilter) {
  const limit = filter.limit ?? FEED_LIMIT.default;
  if (!Number.isInteger(limit) || limit < FEED_LIMIT.min || limit > FEED_LIMIT.max) {
    throw badInput(`limit must be an integer from ${FEED_LIMIT.min} to ${FEED_LIMIT.max}.`, [
      { path: 'limit', message: `must be between ${FEED_LIMIT.min} and ${FEED_LIMIT.max}` },
    ]);
  }
  return { limit, f: normalizeFilter(filter) };
}

function feedPage(userId: string, page: { notifications: NotificationView[]; more: boolean; total: number; hasUnread: boolean }): FeedPage {
  const last = page.notifications[page.notifications.length - 1];
  return {
    notifications: page.notifications,
    total: page.total,
    hasUnread: page.hasUnread,
    nextCursor: page.more && last ? encodeCursor(userId, last) : null,
  };
}

export async function listNotifications(sql: Sql, userId: string, filter: ListFilter): Promise<FeedPage> {
  const { limit, f } = listing(filter);
  const after = filter.cursor ? decodeCursor(userId, filter.cursor) : null;

  const [page, counts] = await Promise.all([selectFeedPage(sql, userId, f, after, limit), totals(sql, userId, f)]);
  return feedPage(userId, { ...page, ...counts });
}

/**
 * `listNotifications` for the owner of the gateway key with this hash, with the key lookup folded
 * into one statement with the page and its totals (`auth/key-preload.ts`); null for a listing it
 * would refuse (`listNotifications` then refuses it with its own error). A cursor is checked
 * against the owner once the statement names it, with the same refusal.
 */
export function listNotificationsOfKey(sql: Sql, keyHash: string, filter: ListFilter): KeyPreload<FeedPage> | null {
  let checked: ReturnType<typeof listing>;
  try {
    checked = listing(filter);
  } catch {
    return null;
  }
  const { limit, f } = checked;
  const cursor = filter.cursor ? readKeysetCursor(filter.cursor) : null;
  if (filter.cursor && !cursor) return null;
  return splitRows(feedRowsOfKey(sql, keyHash, f, cursor?.position ?? null, limit), (rows, owner) => {
    if (filter.cursor && !cursor?.of(owner.userId)) decodeCursor(owner.userId, filter.cursor);
    return feedPage(owner.userId, feedOfKeyRows(rows, limit));
  });
}

/** `countNotifications` for the owner of the gateway key with this hash, the key lookup folded in (`auth/key-preload.ts`). */
export function countNotificationsOfKey(
  sql: Sql,
  keyHash: string,
  notificationTypeFilter?: string | null,
): KeyPreload<NotificationCountsByType> {
  return splitRows(counterRowsOfKey(sql, keyHash, notificationTypeFilter || null), countsOfRows);
}

/**
 * `total` and `hasUnread`. Without a search term both come from the counter rows; a search term
 * needs the matching rows themselves (served by the trigram indexes).
 */
async function totals(sql: Sql, userId: string, f: FeedConditions) {
  if (f.search === null) {
    const counts = await counterTotals(sql, userId, f.type);
    const total = f.seen === null ? counts.unreadCount + counts.readCount : f.seen ? counts.readCount : counts.unreadCount;
    return { total, hasUnread: counts.unreadCount > 0 };
  }
  return searchTotals(sql, userId, f);
}

/**
 * Marks the caller's own rows; ids of other users, unknown and malformed ids are silently ignored.
 * Returns the ids of the rows whose state changed.
 */
export async function markNotifications(
  sql: Sql,
  writer: FeedWriter,
  notificationIds: readonly string[],
  isSeen: boolean,
): Promise<string[]> {
  if (notificationIds.length > MARK_IDS_MAX) {
    throw badInput(`notificationIds may hold at most ${MARK_IDS_MAX} ids.`, [
      { path: 'notificationIds', message: `must hold at most ${MARK_IDS_MAX} ids` },
    ]);
  }
  const ids = [...new Set(notificationIds.filter(isUuid).map((id) => id.toLowerCase()))].sort();
  if (ids.length === 0) return [];
  return inTurn(writer, placeInQueue(writer), () => updateSeen(sql, writer.userId, ids, isSeen));
}

/**
 * Marks every row of the caller's matching the type filter (empty ≡ omitted; an unknown type
 * matches nothing) that existed when the call began; see `updateAllSeen` for why rows published
 * meanwhile are untouched. A call that has to wait for its turn takes the database's snapshot
 * as it arrives, so rows published while it waits are untouched too.
 */
export async function markAllNotifications(
  sql: Sql,
  writer: FeedWriter,
  isSeen: boolean,
  notificationTypeFilter?: string | null,
): Promise<FeedMarkOutcome> {
  const place = placeInQueue(writer);
  const asOf = place.waited ? currentSnapshot(sql) : Promise.resolve(null);
  // Awaited only once the turn comes, which a caller that leaves never reaches.
  asOf.catch(() => undefined);
  return inTurn(writer, place, async () =>
    updateAllSeen(sql, writer.userId, { type: notificationTypeFilter || null, isSeen, asOf: await asOf }),
  );
}

export function availableNotificationTypes(em: Em): Promise<NotificationType[]> {
  return notificationTypeCatalog(em);
}

/** `createdAt` is for backfills; it defaults to now. */
export type PublishNotificationInput = Omit<NewNotification, 'createdAt'> & { createdAt?: Date | null };

/** Inserts a batch in one statement, once every item names a catalog type and a known user. */
export async function publishNotifications(em: Em, inputs: readonly PublishNotificationInput[]): Promise<NotificationView[]> {
  if (inputs.length > PUBLISH_MAX)
    throw badInput(`input may hold at most ${PUBLISH_MAX} notifications.`, [
      { path: 'input', message: `must hold at most ${PUBLISH_MAX} items` },
    ]);
  if (inputs.length === 0) return [];
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
  });
  if (details.length) throw badInput('Some notifications cannot be published.', details);

  const now = Date.now();
  return insertNotifications(
    em,
    inputs.map((input) => ({ ...input, userId: input.userId.toLowerCase(), createdAt: input.createdAt ?? new Date(now) })),
  );
}
