/** At most once: while Redis is away messages miss other instances, so `onResume` tells listeners to catch up. */
export interface EventBus {
  publish(channel: string, message: string): Promise<void>;
  /** `ready` settles once Redis confirmed the subscription, or it cannot be; it never rejects. */
  subscribe(channel: string, listener: (message: string) => void): Subscription;
  deliverLocally(channel: string, message: string): void;
  onResume(listener: (channels: string[]) => void): void;
  close(): void;
}

export interface Subscription {
  ready: Promise<void>;
  close(): void;
}

export function localChannels() {
  const channels = new Map<string, Set<(message: string) => void>>();
  return {
    channels,
    add(channel: string, listener: (message: string) => void): boolean {
      let listeners = channels.get(channel);
      const first = !listeners;
      if (!listeners) channels.set(channel, (listeners = new Set()));
      listeners.add(listener);
      return first;
    },
    /** True when the channel has no listener left. */
    remove(channel: string, listener: (message: string) => void): boolean {
      const listeners = channels.get(channel);
      if (!listeners?.delete(listener) || listeners.size) return false;
      channels.delete(channel);
      return true;
    },
    deliver(channel: string, message: string) {
      for (const listener of channels.get(channel) ?? []) listener(message);
    },
  };
}

export function createLocalEventBus(): EventBus {
  const local = localChannels();
  return {
    async publish(channel, message) {
      local.deliver(channel, message);
    },
    subscribe(channel, listener) {
      local.add(channel, listener);
      return { ready: Promise.resolve(), close: () => void local.remove(channel, listener) };
    },
    deliverLocally: local.deliver,
    onResume() {},
    close() {},
  };
}
