import type { Logger } from 'pino';
import { AppError } from '../common/errors.js';
import { createBoundedQueue, type BoundedQueue } from '../infra/bounded-queue.js';
import type { Db } from '../infra/database/sql.js';
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

/** Bytes of events (as JSON) a stream may hold undelivered; past it the client is disconnected and re-reads. */
export const STREAM_BUFFER_MAX_BYTES = 256 * 1024;

/** How long opening a stream waits for the event bus to confirm it listens (Redis may be away). */
const SUBSCRIBE_WAIT_MS = 1000;

/** More events than this from one change reach a stream as one `updated` event with no ids: "re-read". */
const BURST_MAX = 50;

/** The most ids an `updated` event lists (a markNotificationsRead call's most); a larger change lists none. */
const UPDATED_IDS_MAX = 500;

/** One user's change as it travels between instances: the events and every type's counts after the commit. */
interface ChangeMessage {
  events: Array<Pick<NotificationEvent, 'kind' | 'notification' | 'notificationIds'>>;
  /** unread and read count per notification type. */
  counts: Record<string, [number, number]>;
}

const CHANNEL_PREFIX = 'notifications:events:';
const channelOf = (userId: string) => CHANNEL_PREFIX + userId;

export interface NotificationEvents {
  /** After a publish committed: one `created` event per notification, to its owner's streams. */
  created(notifications: ReadonlyArray<{ userId: string; notification: NotificationView }>): Promise<void>;
  /**
   * After a mark committed: one `updated` event with the changed rows and the new counts; none for
   * no ids. `null` (mark-all) or over UPDATED_IDS_MAX ids: the event lists none, telling the client to re-read.
   */
  updated(userId: string, notificationIds: readonly string[] | null): Promise<void>;
  /**
   * The user's events from when the bus listens (or SUBSCRIBE_WAIT_MS, Redis being away) until the
   * lease ends (`revoked`: an `invalid_key` error) or the consumer returns. `created` events follow
   * the filter, `updated` ones always come; past STREAM_BUFFER_MAX_BYTES the lease ends (`overflow`).
   */
  subscribe(userId: string, notificationTypeFilter: string | null, lease: StreamLease): Promise<AsyncIterableIterator<NotificationEvent>>;
}

/**
 * Delivers feed changes to the owners' open streams on every instance, through the event bus.
 * Writers call it after their commit, so a stream never hears of a row a reader cannot yet see;
 * a failure to deliver is logged and never fails the write.
 */
export function createNotificationEvents(deps: { db: Db; bus: EventBus; log: Logger }): NotificationEvents {
  const { db, bus, log } = deps;
  const channels = createUserChannels(bus, log);
  const countsNow = async (userId: string): Promise<ChangeMessage['counts']> =>
    Object.fromEntries((await counterTotals(db, userId, null)).byType.map((c) => [c.notificationType, [c.unreadCount, c.readCount]]));
  const send = async (userId: string, events: ChangeMessage['events']) => {
    try {
      const message: ChangeMessage = { events, counts: await countsNow(userId) };
      await bus.publish(channelOf(userId), JSON.stringify(message));
    } catch (error) {
      log.error({ err: error }, 'could not deliver notification events');
    }
  };
  bus.onResume((resumed) => catchUp(resumed, bus, countsNow, log));

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
    subscribe: (userId, notificationTypeFilter, lease) => watch(channels, userId, notificationTypeFilter, lease),
  };
}

/**
 * Events published while this instance's subscriber was away are lost: each stream gets an
 * `updated` event with the counts as they are now, so its client knows to re-read.
 */
function catchUp(channels: string[], bus: EventBus, countsNow: (userId: string) => Promise<ChangeMessage['counts']>, log: Logger) {
  for (const channel of channels) {
    if (!channel.startsWith(CHANNEL_PREFIX)) continue;
    countsNow(channel.slice(CHANNEL_PREFIX.length)).then(
      (counts) =>
        bus.deliverLocally(channel, JSON.stringify({ events: [{ kind: 'updated', notification: null, notificationIds: [] }], counts })),
      (error) => log.warn({ err: error }, 'could not re-read counts after the event bus resumed'),
    );
  }
}

/** One stream of the user's events, ended as its lease says (see NotificationEvents.subscribe). */
async function watch(channels: UserChannels, userId: string, filter: string | null, lease: StreamLease) {
  const queue = createBoundedQueue<NotificationEvent>(
    STREAM_BUFFER_MAX_BYTES,
    () => {
      channels.leave(userId, watcher);
      lease.signal.removeEventListener('abort', onEnd);
    },
    (event) => eventBytes.get(event) ?? 0,
  );
  const watcher: Watcher = { filter, lease, queue };
  const onEnd = () => {
    const reason = lease.signal.reason as StreamEndReason;
    // The response is over: let go of everything at once, whether or not the iterator was consumed.
    if (reason === 'released' || reason === 'overflow') void queue.return();
    else if (reason === 'revoked') queue.fail(new AppError('invalid_key', 'The key was revoked; the stream has ended.'));
    else queue.end();
  };
  const user = channels.join(userId, watcher);
  lease.signal.addEventListener('abort', onEnd, { once: true });
  if (lease.signal.aborted) onEnd();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([user.ready, new Promise((resolve) => (timer = setTimeout(resolve, SUBSCRIBE_WAIT_MS)))]);
  clearTimeout(timer);
  return queue;
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

type UserChannels = ReturnType<typeof createUserChannels>;
