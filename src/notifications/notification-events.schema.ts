import { builder } from '../schema/builder.js';
import type { NotificationEvent } from './notification-events.js';
import { NotificationCountsRef, NotificationRef } from './notifications.schema.js';

const NotificationEventKind = builder.enumType('NotificationEventKind', {
  values: {
    created: { description: 'A notification was published.' },
    updated: { description: 'Notifications were marked read or unread.' },
    reset: {
      description:
        'The stream resumed from a Last-Event-ID it cannot replay from (unknown, or older than 5 minutes), or events may have been lost: re-read the feed; counts are current.',
    },
  },
});

const NotificationEventRef = builder.objectRef<NotificationEvent>('NotificationEvent').implement({
  description: "A change to the caller's feed.",
  fields: (t) => ({
    kind: t.field({ type: NotificationEventKind, resolve: (event) => event.kind }),
    counts: t.field({
      type: NotificationCountsRef,
      description: "The badge numbers after the change (for the stream's notificationTypeFilter).",
      resolve: (event) => event.counts,
    }),
    notification: t.field({
      type: NotificationRef,
      nullable: true,
      description: 'The new notification (created); null for updated.',
      resolve: (event) => event.notification,
    }),
    notificationIds: t.idList({
      description: 'created: the new notification; updated: those whose state changed.',
      resolve: (event) => event.notificationIds,
    }),
  }),
});

builder.subscriptionFields((t) => ({
  notificationEvents: t.withAuth({ READ: true }).field({
    type: NotificationEventRef,
    description:
      "Pushes each change to the caller's feed as it commits (Server-Sent Events): created events (only of notificationTypeFilter's type, when given) and updated events (always, with the filter's counts). Each event has an SSE id: reconnecting with it as the Last-Event-ID header within 5 minutes first replays the events missed, in order (one reset event when they cannot be told).",
    args: { notificationTypeFilter: t.arg.string({ description: 'Exact notification type; empty ≡ omitted.' }) },
    subscribe: (_root, args, ctx) => {
      // The slot is held for as long as the response is: until it ends, or its client leaves.
      const { keyId, userId, organizationId } = ctx.principal;
      const lease = ctx.services.streams.open({ keyId, userId, organizationId }, ctx.client);
      return ctx.services.notificationEvents.subscribe(userId, args.notificationTypeFilter || null, lease, ctx.lastEventId);
    },
    resolve: (event) => event,
  }),
}));
