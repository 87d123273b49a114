import type { Logger } from 'pino';
import { AppError } from '../common/errors.js';
import { createBoundedQueue, type BoundedQueue } from '../infra/bounded-queue.js';
import type { Sql } from '../infra/database/sql.js';
import type { EventBus } from '../infra/event-bus.js';
import type { StreamEndReason, StreamLease } from '../infra/stream-registry.js';
import { counterTotals, sumCounterRows, type NotificationCountsByType, type NotificationView } from './feed.data.js';

declare module '../schema/context.js' {
  interface Services {
    notificationEvents: NotificationEvents;
  }
}

/** What a watcher of the feed receives (`notificationEvents`, the gateway's `watchNotifications`). */
export interface NotificationEvent {
  kind: 'created' | 'updated';
  /** The badge numbers once the change committed (for the stream's type filter, if any), per type too. */
  counts: NotificationCountsByType;
  /** The new notification of a `created` event; null for `updated`. */
  notification: NotificationView | null;
  /** The notifications the change concerns (created: the one; updated: those whose state changed). */
  notificationIds: string[];
}

/**
 * How many bytes of events a stream may hold undelivered (a consumer reading slower than its feed
 * changes), by each event's size as JSON. Past it the stream's client is disconnected; it
 * reconnects and re-reads the counts. The events themselves are shared by the user's streams.
 */
export const STREAM_BUFFER_MAX_BYTES = 256 * 1024;

/** How long opening a stream waits for the event bus to confirm it listens (Redis may be away). */
const SUBSCRIBE_WAIT_MS = 1000;

/**
 * More events than this from one change (a publish of many notifications for one user) reach a
 * stream as one `updated` event with no ids: its client re-reads the first page.
 */
const BURST_MAX = 50;

/** The most ids an `updated` event lists (a markNotificationsRead call's most); a larger change lists none. */
const UPDATED_IDS_MAX = 500;

/** One user's change as it travels between instances: the events and every type's counts after the commit. */
interface ChangeMessage {
  events: Array<Pick<NotificationEvent, 'kind' | 'notification' | 'notificationIds'>>;
  /** unread and read count per notification type. */
  counts: Record<string, [number, number]>;
}

const channelOf = (userId: string) => `notifications:events:${userId}`;

export interface NotificationEvents {
  /** After a publish committed: one `created` event per notification, to its owner's streams. */
  created(notifications: ReadonlyArray<{ userId: string; notification: NotificationView }>): Promise<void>;
  /**
   * After a mark committed: one `updated` event with the rows whose state changed and the new
   * counts. No ids: nothing changed, nothing is sent. `null` (a bulk change such as mark-all), or
   * more than UPDATED_IDS_MAX ids: the event lists none (`notificationIds: []`), telling the client to re-read.
   */
  updated(userId: string, notificationIds: readonly string[] | null): Promise<void>;
  /**
   * The user's events from the moment it resolves (once the event bus confirmed it listens, or after
   * SUBSCRIBE_WAIT_MS without a confirmation, e.g. while Redis is away), until the consumer returns
   * the iterator or the lease's signal aborts (with a StreamEndReason: `revoked` ends it with an
   * `invalid_key` error). `created` events of other types than `notificationTypeFilter` are
   * skipped; `updated` events always come, with the filter's counts. A consumer holding more than
   * STREAM_BUFFER_MAX_BYTES of events ends its lease (`overflow`). The streams of one user share
   * each event: one object per change and filter, whatever the number of streams.
   */
  subscribe(userId: string, notificationTypeFilter: string | null, lease: StreamLease): Promise<AsyncIterableIterator<NotificationEvent>>;
}

/**
 * Delivers feed changes to the owners' open streams on every instance, through the event bus.
 * The writers call it after their transaction committed, so a stream never hears of a row a
 * reader could not yet see. A failure to deliver is logged and never fails the write.
 */
export function createNotificationEvents(deps: { sql: Sql; bus: EventBus; log: Logger }): NotificationEvents {
  const { sql, bus, log } = deps;
  const hub = createUserChannels(bus, log);

  const countsMessage = async (userId: string): Promise<ChangeMessage['counts']> =>
    Object.fromEntries((await counterTotals(sql, userId, null)).byType.map((c) => [c.notificationType, [c.unreadCount, c.readCount]]));

  const send = async (userId: string, events: ChangeMessage['events']) => {
    try {
      const message: ChangeMessage = { events, counts: await countsMessage(userId) };
      await bus.publish(channelOf(userId), JSON.stringify(message));
    } catch (error) {
      log.error({ err: error }, 'could not deliver notification events');
    }
  };

  // Events published while this instance's subscriber was away are lost: each stream gets an
  // `updated` event with the counts as they are now, so its client knows to re-read.
  bus.onResume((channels) => {
    for (const channel of channels) {
      if (!channel.startsWith('notifications:events:')) continue;
      const userId = channel.slice('notifications:events:'.length);
      countsMessage(userId).then(
        (counts) =>
          bus.deliverLocally(channel, JSON.stringify({ events: [{ kind: 'updated', notification: null, notificationIds: [] }], counts })),
        (error) => log.warn({ err: error }, 'could not re-read counts after the event bus resumed'),
      );
    }
  });

  return {
    async created(notifications) {
      const byUser = new Map<string, ChangeMessage['events']>();
      for (const { userId, notification } of notifications) {
        let events = byUser.get(userId);
        if (!events) byUser.set(userId, (events = []));
        events.push({ kind: 'created', notification, notificationIds: [notification.id] });
      }
      await Promise.all([...byUser].map(([userId, events]) => send(userId, events)));
    },

    async updated(userId, notificationIds) {
      if (notificationIds?.length === 0) return;
      const listed = notificationIds && notificationIds.length <= UPDATED_IDS_MAX ? [...notificationIds] : [];
      await send(userId, [{ kind: 'updated', notification: null, notificationIds: listed }]);
    },

    async subscribe(userId, notificationTypeFilter, lease) {
      const queue = createBoundedQueue<NotificationEvent>(
        STREAM_BUFFER_MAX_BYTES,
        () => {
          hub.leave(userId, watcher);
          lease.signal.removeEventListener('abort', onEnd);
        },
        (event) => eventBytes.get(event) ?? 0,
      );
      const watcher: Watcher = { filter: notificationTypeFilter, lease, queue };
      const onEnd = () => {
        const reason = lease.signal.reason as StreamEndReason;
        // The response is over: let go of everything at once, whether or not the iterator was consumed.
        if (reason === 'released' || reason === 'overflow') void queue.return();
        else if (reason === 'revoked') queue.fail(new AppError('invalid_key', 'The key was revoked; the stream has ended.'));
        else queue.end();
      };
      const user = hub.join(userId, watcher);
      lease.signal.addEventListener('abort', onEnd, { once: true });
      if (lease.signal.aborted) onEnd();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([user.ready, new Promise((resolve) => (timer = setTimeout(resolve, SUBSCRIBE_WAIT_MS)))]);
      clearTimeout(timer);
      return queue;
    },
  };
}

/** One open stream as the channels see it. */
interface Watcher {
  filter: string | null;
  lease: StreamLease;
  queue: BoundedQueue<NotificationEvent>;
}

/** Each shared event's size as JSON: what it weighs in the queues of the streams that hold it. */
const eventBytes = new WeakMap<NotificationEvent, number>();

/**
 * One event bus subscription per user with open streams on this instance, whatever their number:
 * each message is parsed once, and its events are built once per type filter among the user's
 * streams, then handed to every stream of that filter (shared, not copied).
 */
function createUserChannels(bus: EventBus, log: Logger) {
  const users = new Map<string, { watchers: Set<Watcher>; ready: Promise<void>; close(): void }>();

  const deliver = (userId: string, raw: string) => {
    const user = users.get(userId);
    if (!user) return;
    let message: ChangeMessage;
    try {
      message = JSON.parse(raw) as ChangeMessage;
    } catch (error) {
      return log.warn({ err: error }, 'unreadable notification event message');
    }
    const byFilter = new Map<string | null, NotificationEvent[]>();
    for (const watcher of [...user.watchers]) {
      let events = byFilter.get(watcher.filter);
      if (!events) byFilter.set(watcher.filter, (events = eventsFor(message, watcher.filter)));
      // A consumer this far behind is ended at once (what it missed is dropped) rather than buffered for.
      if (!events.every((event) => watcher.queue.push(event))) watcher.lease.end('overflow');
    }
  };

  return {
    join(userId: string, watcher: Watcher) {
      let user = users.get(userId);
      if (!user) {
        const subscription = bus.subscribe(channelOf(userId), (raw) => deliver(userId, raw));
        user = { watchers: new Set(), ready: subscription.ready, close: subscription.close };
        users.set(userId, user);
      }
      user.watchers.add(watcher);
      return user;
    },
    leave(userId: string, watcher: Watcher) {
      const user = users.get(userId);
      if (!user?.watchers.delete(watcher) || user.watchers.size) return;
      users.delete(userId);
      user.close();
    },
  };
}

/** A change's events as a stream with `filter` receives them, each weighed once. */
function eventsFor(message: ChangeMessage, filter: string | null): NotificationEvent[] {
  const counts = countsFor(message.counts, filter);
  let events = message.events.filter(
    (event) => event.kind !== 'created' || filter === null || event.notification?.notificationType === filter,
  );
  // A bulk publish (a backfill) is one event saying "re-read", not hundreds in a burst.
  if (events.length > BURST_MAX) events = [{ kind: 'updated', notification: null, notificationIds: [] }];
  return events.map((event) => {
    const shared: NotificationEvent = { ...event, counts };
    eventBytes.set(shared, JSON.stringify(shared).length);
    return shared;
  });
}

/** As getNotificationCounts answers: the filter's totals, and one entry per type with rows, sorted. */
function countsFor(counts: ChangeMessage['counts'], filter: string | null): NotificationCountsByType {
  return sumCounterRows(
    Object.keys(counts)
      .sort()
      .filter((notificationType) => filter === null || notificationType === filter)
      .map((notificationType) => ({ notificationType, unreadCount: counts[notificationType][0], readCount: counts[notificationType][1] })),
  );
}
