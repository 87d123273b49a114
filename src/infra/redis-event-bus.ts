import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { localChannels, type EventBus } from './event-bus.js';

/** Redis requires a dedicated subscriber connection; ioredis re-subscribes it after reconnecting. */
export function createRedisEventBus(url: string, publisher: Redis, log: Logger): EventBus {
  const local = localChannels();
  const resumeListeners: Array<(channels: string[]) => void> = [];
  const subscriber = connectSubscriber(url, log, {
    onMessage: local.deliver,
    onResumed: () => {
      const channels = [...local.channels.keys()];
      for (const listener of resumeListeners) listener(channels);
    },
  });
  const confirmations = new Map<string, Promise<void>>();
  return {
    publish: publishOrDeliverLocally(publisher, local.deliver, log),
    subscribe(channel, listener) {
      if (local.add(channel, listener)) confirmations.set(channel, subscriber.subscribe(channel).then(ignore, ignore));
      return {
        ready: confirmations.get(channel) ?? Promise.resolve(),
        close: () => {
          if (!local.remove(channel, listener)) return;
          confirmations.delete(channel);
          subscriber.unsubscribe(channel).catch(ignore);
        },
      };
    },
    deliverLocally: local.deliver,
    onResume(listener) {
      resumeListeners.push(listener);
    },
    close() {
      subscriber.disconnect();
    },
  };
}

const ignore = () => undefined;

function connectSubscriber(
  url: string,
  log: Logger,
  handlers: { onMessage: (channel: string, message: string) => void; onResumed: () => void },
) {
  const subscriber = new Redis(url, {
    lazyConnect: true,
    autoResubscribe: true,
    // Subscriptions wait for the connection rather than fail: they are re-sent when it returns.
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  let connectedOnce = false;
  let lost = false;
  subscriber.on('message', handlers.onMessage);
  subscriber.on('error', (error) => {
    if (!lost) log.warn({ err: error }, 'redis subscriber unavailable; streams get events again when it returns');
    lost = connectedOnce;
  });
  subscriber.on('close', () => {
    lost = connectedOnce;
  });
  subscriber.on('ready', () => {
    const resumed = lost;
    connectedOnce = true;
    lost = false;
    if (!resumed) return;
    log.info('redis subscriber restored');
    handlers.onResumed();
  });
  subscriber.connect().catch(ignore); // retried by ioredis; reported by the 'error' handler
  return subscriber;
}

/** Publishing fails fast while Redis is down; this instance's listeners are then told directly. */
function publishOrDeliverLocally(publisher: Redis, deliverLocally: (channel: string, message: string) => void, log: Logger) {
  let warned = false;
  return async (channel: string, message: string) => {
    try {
      await publisher.publish(channel, message);
      warned = false;
    } catch (error) {
      if (!warned) log.warn({ err: error }, 'redis publish failed; delivering to this instance only');
      warned = true;
      deliverLocally(channel, message);
    }
  };
}
