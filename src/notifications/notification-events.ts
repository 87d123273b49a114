import type { Logger } from 'pino';
import { AppError } from '../common/errors.js';
import { createBoundedQueue, type BoundedQueue } from '../infra/bounded-queue.js';
import type { Db } from '../infra/database/sql.js';
import type { EventBus } from '../infra/event-bus.js';
import type { EventLog, LogEntry, LogRead } from '../infra/event-log.js';
import type { StreamEndReason, StreamLease } from '../infra/stream-registry.js';
import { counterTotals, sumCounterRows, type NotificationCountsByType, type NotificationView } from './feed.data.js';
import { createGapRepair } from './event-gaps.js';
import { eventIdOf, eventPosition, isAfterPosition, UNLOGGED_ID, type EventPosition } from './event-ids.js';

declare module '../schema/context.js' {
  interface Services {
    notificationEvents: NotificationEvents;
  }
}

/** What a watcher of the feed receives (`notificationEvents`, the gateway's `watchNotifications`). */
export interface NotificationEvent {
  /** `reset`: what the stream missed cannot be told (it resumed from an unknown or too old id): re-read. */
  kind: 'created' | 'updated' | 'reset';
  /** The badge numbers once the change committed (for the stream's type filter, if any), per type too. */
  counts: NotificationCountsByType;
  notification: NotificationView | null;
  /** The notifications the change concerns (created: the one; updated: those whose state changed). */
  notificationIds: string[];
  /** Where a stream resumes from after this event (its SSE id, sent back as Last-Event-ID); not a field of the schema. */
  eventId: string;
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
export interface ChangeMessage {
  events: Array<Pick<NotificationEvent, 'kind' | 'notification' | 'notificationIds'>>;
  counts: Record<string, [number, number]>;
}

const CHANNEL_PREFIX = 'notifications:events:';
const channelOf = (userId: string) => CHANNEL_PREFIX + userId;
/** The user's log of recent changes (a Redis stream, or in process), read by streams that resume. */
const logKeyOf = (userId: string) => 'notifications:log:' + userId;

export interface NotificationEvents {
  created(notifications: ReadonlyArray<{ userId: string; notification: NotificationView }>): Promise<void>;
  /** After a mark committed: one `updated` event; a mark-all or a large change lists no ids (re-read). */
  updated(userId: string, notificationIds: readonly string[] | null): Promise<void>;
  /**
   * The user's events until the lease ends or the consumer returns. With `lastEventId`, first what
   * followed that event in the log, or one `reset` when the log cannot tell.
   */
  subscribe(
    userId: string,
    notificationTypeFilter: string | null,
    lease: StreamLease,
    lastEventId?: string | null,
  ): Promise<AsyncIterableIterator<NotificationEvent>>;
  /** Stops retrying repairs of logs (see event-gaps.ts). */
  close(): void;
}

/**
 * Delivers feed changes to the owners' streams on every instance and keeps a log for resumes.
 * Called after commit, so no stream hears of a row a reader cannot see; failures never fail the write.
 */
export function createNotificationEvents(deps: { db: Db; bus: EventBus; eventLog: EventLog; log: Logger }): NotificationEvents {
  const { db, bus, eventLog, log } = deps;
  const channels = createUserChannels(bus, log);
  const countsNow = async (userId: string): Promise<ChangeMessage['counts']> =>
    Object.fromEntries((await counterTotals(db, userId, null)).byType.map((c) => [c.notificationType, [c.unreadCount, c.readCount]]));
  const append = async (userId: string, events: ChangeMessage['events']) => {
    const message: ChangeMessage = { events, counts: await countsNow(userId) };
    return eventLog.append(logKeyOf(userId), channelOf(userId), JSON.stringify(message));
  };
  const gaps = createGapRepair(async (userId) => void (await append(userId, [RESET])), log);
  let unlogged = false;
  const send = async (userId: string, events: ChangeMessage['events']) => {
    let message: string | undefined;
    try {
      message = JSON.stringify({ events, counts: await countsNow(userId) } satisfies ChangeMessage);
      await eventLog.append(logKeyOf(userId), channelOf(userId), message);
      unlogged = false;
    } catch (error) {
      if (message === undefined) return log.error({ err: error }, 'could not deliver notification events');
      // Redis away: this instance's streams still hear of it, under an id no stream resumes from.
      if (!unlogged) log.warn({ err: error }, 'could not log notification events; delivering to this instance only');
      unlogged = true;
      gaps.note(userId);
      bus.deliverLocally(channelOf(userId), `${UNLOGGED_ID} ${message}`);
    }
  };
  // Messages published while this instance's subscriber was away were missed by its streams.
  bus.onResume((resumed) => gaps.repair(resumed.filter((c) => c.startsWith(CHANNEL_PREFIX)).map((c) => c.slice(CHANNEL_PREFIX.length))));
  const resetFor = async (userId: string, filter: string | null, eventId: string) =>
    withWeight({ ...RESET, counts: countsFor(await countsNow(userId), filter), eventId });
  const readLog = (userId: string, fromId: string) => eventLog.readFrom(logKeyOf(userId), fromId);

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
    subscribe: (userId, notificationTypeFilter, lease, lastEventId) =>
      watch({ channels, readLog, resetFor, log }, { userId, filter: notificationTypeFilter, lease, lastEventId: lastEventId || null }),
    close: () => gaps.close(),
  };
}

const RESET = { kind: 'reset', notification: null, notificationIds: [] } as const satisfies ChangeMessage['events'][number];

interface WatchDeps {
  channels: UserChannels;
  readLog: (userId: string, fromId: string) => Promise<LogRead>;
  resetFor: (userId: string, filter: string | null, eventId: string) => Promise<NotificationEvent>;
  log: Logger;
}

/** One stream of the user's events, ended as its lease says (see NotificationEvents.subscribe). */
async function watch(deps: WatchDeps, stream: { userId: string; filter: string | null; lease: StreamLease; lastEventId: string | null }) {
  const { userId, filter, lease } = stream;
  const queue = createBoundedQueue<NotificationEvent>(
    STREAM_BUFFER_MAX_BYTES,
    () => {
      deps.channels.leave(userId, watcher);
      lease.signal.removeEventListener('abort', onEnd);
    },
    (event) => eventBytes.get(event) ?? 0,
  );
  // A resuming stream holds live events aside until what it missed is in its queue.
  const watcher: Watcher = { filter, lease, queue, held: stream.lastEventId === null ? null : [] };
  const onEnd = () => {
    const reason = lease.signal.reason as StreamEndReason;
    // The response is over: let go of everything at once, whether or not the iterator was consumed.
    if (reason === 'released' || reason === 'overflow') void queue.return();
    else if (reason === 'revoked') queue.fail(new AppError('invalid_key', 'The key was revoked; the stream has ended.'));
    else queue.end();
  };
  const user = deps.channels.join(userId, watcher);
  lease.signal.addEventListener('abort', onEnd, { once: true });
  if (lease.signal.aborted) onEnd();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([user.ready, new Promise((resolve) => (timer = setTimeout(resolve, SUBSCRIBE_WAIT_MS)))]);
  clearTimeout(timer);
  if (stream.lastEventId !== null) await resume(deps, stream, watcher);
  return queue;
}

/** Fills a resuming stream's queue from the log, then the live events held meanwhile, then goes live. */
async function resume(deps: WatchDeps, stream: { userId: string; filter: string | null; lastEventId: string | null }, watcher: Watcher) {
  const from = eventPosition(stream.lastEventId);
  let missed: NotificationEvent[] | null = null;
  let upTo: EventPosition | null = null;
  try {
    // An id that cannot be ours is looked up as one the log never holds: the answer is its tail.
    const read = await deps.readLog(stream.userId, from?.entryId ?? UNLOGGED_ID);
    if (read.found && from) [missed, upTo] = [replay(read.entries, from, stream.filter), from];
    else if (!read.found) upTo = eventPosition(read.tailId);
  } catch (error) {
    deps.log.warn({ err: error }, 'could not read the notification log; the resuming stream re-reads');
  }
  if (missed?.length) upTo = eventPosition(missed.at(-1)!.eventId);
  if (missed && missed.reduce((sum, event) => sum + (eventBytes.get(event) ?? 0), 0) > STREAM_BUFFER_MAX_BYTES) missed = null;
  if (!missed) missed = [await deps.resetFor(stream.userId, stream.filter, upTo ? eventIdOf(upTo.entryId, null) : UNLOGGED_ID)];
  const held = watcher.held ?? [];
  watcher.held = null;
  const later = held.filter((event) => {
    const at = eventPosition(event.eventId);
    return !at || !upTo || isAfterPosition(at, upTo);
  });
  for (const event of [...missed, ...later]) {
    if (watcher.queue.closed) return;
    if (!watcher.queue.push(event)) return watcher.lease.end('overflow');
  }
}

/** The log's entries from the client's last event on, as events of the stream's filter, after that event. */
function replay(entries: LogEntry[], from: EventPosition, filter: string | null): NotificationEvent[] {
  const events: NotificationEvent[] = [];
  for (const entry of entries) {
    let message: ChangeMessage;
    try {
      message = JSON.parse(entry.message) as ChangeMessage;
    } catch {
      continue;
    }
    for (const event of eventsFor(entry.id, message, filter))
      if (entry.id !== from.entryId || isAfterPosition(eventPosition(event.eventId)!, from)) events.push(event);
  }
  return events;
}

/** One open stream as the channels see it. */
interface Watcher {
  filter: string | null;
  lease: StreamLease;
  queue: BoundedQueue<NotificationEvent>;
  /** Live events held while the stream resumes; null once live. */
  held: NotificationEvent[] | null;
}

/** Each shared event's size as JSON: what it weighs in the queues of the streams that hold it. */
const eventBytes = new WeakMap<NotificationEvent, number>();

const withWeight = (event: NotificationEvent) => {
  eventBytes.set(event, JSON.stringify(event).length);
  return event;
};

/** One bus subscription per user per instance: each message is parsed once and shared by that user's streams. */
function createUserChannels(bus: EventBus, log: Logger) {
  const users = new Map<string, { watchers: Set<Watcher>; ready: Promise<void>; close(): void }>();

  const deliver = (userId: string, raw: string) => {
    const user = users.get(userId);
    if (!user) return;
    // `<log entry id> <message>`, as the event log publishes it.
    const space = raw.indexOf(' ');
    let message: ChangeMessage;
    try {
      message = JSON.parse(raw.slice(space + 1)) as ChangeMessage;
    } catch (error) {
      return log.warn({ err: error }, 'unreadable notification event message');
    }
    const entryId = raw.slice(0, space);
    const byFilter = new Map<string | null, NotificationEvent[]>();
    for (const watcher of [...user.watchers]) {
      let events = byFilter.get(watcher.filter);
      if (!events) byFilter.set(watcher.filter, (events = eventsFor(entryId, message, watcher.filter)));
      if (watcher.held) watcher.held.push(...events);
      // A consumer this far behind is ended at once (what it missed is dropped) rather than buffered for.
      else if (!events.every((event) => watcher.queue.push(event))) watcher.lease.end('overflow');
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

/** A change's events for a stream's filter, each with its id (`<entry id>/<index>` on all but the last). */
function eventsFor(entryId: string, message: ChangeMessage, filter: string | null): NotificationEvent[] {
  const counts = countsFor(message.counts, filter);
  let events = message.events
    .map((event, index) => ({ event, index }))
    .filter(({ event }) => event.kind !== 'created' || filter === null || event.notification?.notificationType === filter);
  // A bulk publish (a backfill) is one event saying "re-read", not hundreds in a burst.
  if (events.length > BURST_MAX) events = [{ event: { kind: 'updated', notification: null, notificationIds: [] }, index: 0 }];
  return events.map(({ event, index }, i) =>
    withWeight({ ...event, counts, eventId: i === events.length - 1 ? entryId : eventIdOf(entryId, index) }),
  );
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
