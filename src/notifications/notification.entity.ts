import { defineEntity, p } from '@mikro-orm/core';

/** A catalog entry: the exact string callers pass as `notificationTypeFilter`. */
export const NotificationTypeSchema = defineEntity({
  name: 'NotificationType',
  tableName: 'notification_types',
  properties: {
    notificationType: p.text().primary(),
    label: p.text(),
    category: p.text(),
  },
});
export class NotificationType extends NotificationTypeSchema.class {}
NotificationTypeSchema.setClass(NotificationType);

/** One row of a user's bell feed; millisecond timestamps so a keyset cursor from a JS Date points exactly at its row. */
export const NotificationSchema = defineEntity({
  name: 'Notification',
  tableName: 'notifications',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => crypto.randomUUID()),
    userId: p.uuid(),
    notificationType: p.text(),
    isSeen: p.boolean().default(false),
    title: p.text(),
    body: p.text(),
    createdAt: p.datetime(3).onCreate(() => new Date()),
    seenAt: p.datetime(3).nullable(),
    contactId: p.text().nullable(),
    dealId: p.text().nullable(),
    noteId: p.text().nullable(),
    replyId: p.text().nullable(),
    taskId: p.text().nullable(),
    callId: p.text().nullable(),
    actionType: p.text().nullable(),
    actionTargetId: p.text().nullable(),
  },
});
export class Notification extends NotificationSchema.class {}
NotificationSchema.setClass(Notification);

/** Badge numbers per user and type, kept exact by statement-level triggers, so counts never scan a feed. */
export const NotificationCounterSchema = defineEntity({
  name: 'NotificationCounter',
  tableName: 'notification_counters',
  properties: {
    userId: p.uuid().primary(),
    notificationType: p.text().primary(),
    unreadCount: p.integer(),
    readCount: p.integer(),
  },
});
export class NotificationCounter extends NotificationCounterSchema.class {}
NotificationCounterSchema.setClass(NotificationCounter);
