import { builder } from '../schema/builder.js';
import { constraints } from '../schema/constraints.js';
import { KEYSET_CURSOR_DESCRIPTION, KEYSET_CURSOR_PATTERN } from '../common/keyset-page.js';
import { NOT_A_FEED_CURSOR } from './cursor.js';
import {
  FEED_LIMIT,
  MARK_IDS_MAX,
  PUBLISH_MAX,
  SEARCH_TERM_MAX_LENGTH,
  availableNotificationTypes,
  countNotifications,
  listNotifications,
  markAllNotifications,
  archiveNotifications,
  markNotifications,
  publishNotifications,
  type FeedPage,
} from './feed.service.js';
import type { FeedWriter } from './feed-writes.js';
import type { Context, UserContext } from '../schema/context.js';
import type { Db } from '../infra/database/sql.js';
import type { NotificationCountsByType, NotificationTypeCounts, NotificationTypeEntry, NotificationView } from './feed.data.js';

export const NotificationRef = builder.objectRef<NotificationView>('Notification').implement({
  description: "One item of the caller's bell feed.",
  fields: (t) => ({
    id: t.exposeID('id'),
    notificationType: t.exposeString('notificationType'),
    isSeen: t.exposeBoolean('isSeen'),
    title: t.exposeString('title'),
    body: t.exposeString('body'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    seenAt: t.expose('seenAt', { type: 'DateTime', nullable: true }),
    contactId: t.exposeString('contactId', { nullable: true }),
    dealId: t.exposeString('dealId', { nullable: true }),
    noteId: t.exposeString('noteId', { nullable: true }),
    replyId: t.exposeString('replyId', { nullable: true }),
    taskId: t.exposeString('taskId', { nullable: true }),
    callId: t.exposeString('callId', { nullable: true }),
    actionType: t.exposeString('actionType', { nullable: true, description: 'Used for deep-linking.' }),
    actionTargetId: t.exposeString('actionTargetId', { nullable: true, description: 'Used for deep-linking.' }),
    archivedAt: t.expose('archivedAt', { type: 'DateTime', nullable: true, description: 'When it was archived; null unless archived.' }),
  }),
});

const NotificationPageRef = builder.objectRef<FeedPage>('NotificationPage').implement({
  fields: (t) => ({
    notifications: t.field({ type: [NotificationRef], resolve: (page) => page.notifications }),
    total: t.exposeInt('total', { description: 'Rows matching all filters, over all pages.' }),
    hasUnread: t.exposeBoolean('hasUnread', {
      description: 'An unread row matches the type filter and search term (the seen filter ignored).',
    }),
    nextCursor: t.exposeString('nextCursor', { nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.' }),
  }),
});

const NotificationTypeCountsRef = builder.objectRef<NotificationTypeCounts>('NotificationTypeCounts').implement({
  description: "One type's badge numbers.",
  fields: (t) => ({
    notificationType: t.exposeString('notificationType'),
    unreadCount: t.exposeInt('unreadCount'),
    readCount: t.exposeInt('readCount'),
  }),
});

export const NotificationCountsRef = builder.objectRef<NotificationCountsByType>('NotificationCounts').implement({
  fields: (t) => ({
    unreadCount: t.exposeInt('unreadCount'),
    readCount: t.exposeInt('readCount'),
    byType: t.field({
      type: [NotificationTypeCountsRef],
      description: 'One entry per type the caller has rows of (with a type filter, at most that type), by notificationType.',
      resolve: (counts) => counts.byType,
    }),
  }),
});

const NotificationTypeRef = builder.objectRef<NotificationTypeEntry>('NotificationTypeEntry').implement({
  fields: (t) => ({
    notificationType: t.exposeString('notificationType', { description: 'The exact value to pass as notificationTypeFilter.' }),
    label: t.exposeString('label'),
    category: t.exposeString('category'),
  }),
});

const AvailableNotificationTypesRef = builder.objectRef<{ types: NotificationTypeEntry[] }>('AvailableNotificationTypes').implement({
  fields: (t) => ({ types: t.field({ type: [NotificationTypeRef], resolve: (catalog) => catalog.types }) }),
});

const MarkNotificationsReadResultRef = builder.objectRef<{ updatedCount: number }>('MarkNotificationsReadResult').implement({
  fields: (t) => ({
    success: t.boolean({ resolve: () => true }),
    updatedCount: t.exposeInt('updatedCount', { description: "The caller's rows whose state changed." }),
  }),
});

/** The read replica once it has replayed the caller's last write (infra/database/replica.ts), else the primary. */
const readsOf = (ctx: UserContext): Db => (ctx.services.replica ? ctx.services.replica.readsFor(ctx.principal.userId) : ctx.db.sql);

/** After a write to these users' feeds committed: their next reads see it, on the replica too. */
const wrote = (ctx: Context, userIds: Iterable<string>): Promise<void> | undefined => ctx.services.replica?.wrote(userIds);

builder.queryFields((t) => ({
  notifications: t.withAuth({ READ: true }).field({
    type: NotificationPageRef,
    description: "The caller's feed, newest first, keyset-paginated.",
    args: {
      notificationTypeFilter: t.arg.string({ description: 'Exact notification type; unknown values give an empty feed.' }),
      seen: t.arg.boolean({ description: 'true: read only; false: unread only; omitted: both.' }),
      archived: t.arg.boolean({ description: 'true: only archived notifications; omitted or false: only those not archived.' }),
      searchTerm: t.arg.string({
        description: 'Case-insensitive substring of title or body.',
        ...constraints({ maxLength: SEARCH_TERM_MAX_LENGTH }),
      }),
      limit: t.arg.int({ defaultValue: FEED_LIMIT.default, ...constraints({ minimum: FEED_LIMIT.min, maximum: FEED_LIMIT.max }) }),
      cursor: t.arg.string({
        description: KEYSET_CURSOR_DESCRIPTION,
        ...constraints({ pattern: KEYSET_CURSOR_PATTERN }, { pattern: NOT_A_FEED_CURSOR }),
      }),
    },
    resolve: (_root, args, ctx) => listNotifications(readsOf(ctx), ctx.principal.userId, args),
  }),
  notificationCounts: t.withAuth({ READ: true }).field({
    type: NotificationCountsRef,
    description: 'Badge numbers: a cheap poll before listing.',
    args: { notificationTypeFilter: t.arg.string() },
    resolve: (_root, args, ctx) => countNotifications(readsOf(ctx), ctx.principal.userId, args.notificationTypeFilter),
  }),
  availableNotificationTypes: t.field({
    type: AvailableNotificationTypesRef,
    description: 'The catalog of notificationType values.',
    authScopes: { READ: true },
    resolve: async (_root, _args, ctx) => ({ types: await availableNotificationTypes(ctx.db.sql) }),
  }),
}));

const PublishNotificationInput = builder.inputType('PublishNotificationInput', {
  fields: (t) => ({
    userId: t.id({ required: true }),
    notificationType: t.string({ required: true }),
    title: t.string({ required: true }),
    body: t.string({ required: true }),
    contactId: t.string(),
    dealId: t.string(),
    noteId: t.string(),
    replyId: t.string(),
    taskId: t.string(),
    callId: t.string(),
    actionType: t.string(),
    actionTargetId: t.string(),
    createdAt: t.field({ type: 'DateTime', description: 'For backfills; defaults to now.' }),
    expiresAt: t.field({
      type: 'DateTime',
      description:
        'When it stops being shown (it is deleted within a minute); must be in the future. Omitted: kept for the retention period.',
    }),
  }),
});

/** The caller as a writer of its own feed rows (its writes wait their turn per user: `FeedWrites`). */
const writerOf = (ctx: UserContext): FeedWriter => ({ userId: ctx.principal.userId, client: ctx.client, writes: ctx.services.feedWrites });

builder.mutationFields((t) => ({
  markNotificationsRead: t.withAuth({ WRITE: true }).field({
    type: MarkNotificationsReadResultRef,
    description: 'isSeen true marks read, false marks unread. Ids of other users, unknown and malformed ids are ignored.',
    args: {
      notificationIds: t.arg.idList({ required: true, ...constraints({ maxItems: MARK_IDS_MAX }) }),
      isSeen: t.arg.boolean({ required: true }),
    },
    resolve: async (_root, args, ctx) => {
      const changed = await markNotifications(ctx.db.sql, writerOf(ctx), args.notificationIds.map(String), args.isSeen);
      await wrote(ctx, [ctx.principal.userId]);
      await ctx.services.notificationEvents.updated(ctx.principal.userId, changed);
      return { updatedCount: changed.length };
    },
  }),
  markAllNotificationsRead: t.withAuth({ WRITE: true }).field({
    type: MarkNotificationsReadResultRef,
    description:
      "isSeen true marks read, false marks unread, every one of the caller's notifications (of one type, with notificationTypeFilter) that existed when the call began; rows published meanwhile are untouched.",
    args: {
      isSeen: t.arg.boolean({ required: true }),
      notificationTypeFilter: t.arg.string({
        description: 'Exact notification type; empty means every type; unknown values mark nothing.',
      }),
    },
    resolve: async (_root, args, ctx) => {
      const { updatedCount, notificationIds } = await markAllNotifications(
        ctx.db.sql,
        writerOf(ctx),
        args.isSeen,
        args.notificationTypeFilter,
      );
      await wrote(ctx, [ctx.principal.userId]);
      // After the commit: one `updated` event (the ids when few; none listed past the limit).
      if (updatedCount > 0) await ctx.services.notificationEvents.updated(ctx.principal.userId, notificationIds);
      return { updatedCount };
    },
  }),
  publishNotifications: t.field({
    type: [NotificationRef],
    description: "Adds notifications to users' feeds (internal tools).",
    authScopes: { platform: true },
    args: { input: t.arg({ type: [PublishNotificationInput], required: true, ...constraints({ maxItems: PUBLISH_MAX }) }) },
    resolve: async (_root, args, ctx) => {
      const inputs = args.input.map((input) => ({ ...input, userId: String(input.userId).toLowerCase() }));
      const published = await publishNotifications(ctx.db.em, inputs);
      await wrote(ctx, new Set(inputs.map((input) => input.userId)));
      // In input order, one per input (publishNotifications inserts all or nothing).
      await ctx.services.notificationEvents.created(published.map((notification, i) => ({ userId: inputs[i].userId, notification })));
      return published;
    },
  }),
}));

/** Archives queue with the user's marks (`FeedWrites`) and change counts as marks do. */
builder.mutationFields((t) => ({
  archiveNotifications: t.withAuth({ WRITE: true }).field({
    type: MarkNotificationsReadResultRef,
    description:
      'archived true archives, false restores. An archived notification leaves the feed, its counts and mark-all until restored. Ids of other users, unknown and malformed ids are ignored.',
    args: {
      notificationIds: t.arg.idList({ required: true, ...constraints({ maxItems: MARK_IDS_MAX }) }),
      archived: t.arg.boolean({ required: true }),
    },
    resolve: async (_root, args, ctx) => {
      const changed = await archiveNotifications(ctx.db.sql, writerOf(ctx), args.notificationIds.map(String), args.archived);
      await wrote(ctx, [ctx.principal.userId]);
      await ctx.services.notificationEvents.updated(ctx.principal.userId, changed);
      return { updatedCount: changed.length };
    },
  }),
}));
