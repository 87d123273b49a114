/** Idempotent. */
export type ReleaseTurn = () => void;

export interface QueuePlace {
  readonly waited: boolean;
  /** Rejects with the signal's reason if it aborts first, giving the place up. */
  readonly turn: Promise<ReleaseTurn>;
}

/** Waiters hold nothing but their place (no connection, no lock); idle keys take no memory. */
export function createPerKeyQueue(maxWaiting: number) {
  // Present while the key's turn is held.
  const lines = new Map<string, Array<() => void>>();
  let waiting = 0;

  const releaseOf = (key: string): ReleaseTurn => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const line = lines.get(key);
      const next = line?.shift();
      if (next) {
        waiting--;
        next();
      } else lines.delete(key);
    };
  };

  return {
    maxWaiting,
    get busyKeys(): number {
      return lines.size;
    },
    get waiting(): number {
      return waiting;
    },
    /** Null when `maxWaiting` callers already wait for `key`. */
    enter(key: string, signal: AbortSignal): QueuePlace | null {
      const line = lines.get(key);
      if (!line) {
        lines.set(key, []);
        return { waited: false, turn: Promise.resolve(releaseOf(key)) };
      }
      if (line.length >= maxWaiting) return null;
      if (signal.aborted) return { waited: true, turn: Promise.reject(signal.reason) };
      const turn = new Promise<ReleaseTurn>((resolve, reject) => {
        const leave = () => {
          line.splice(line.indexOf(go), 1);
          waiting--;
          reject(signal.reason);
        };
        const go = () => {
          signal.removeEventListener('abort', leave);
          resolve(releaseOf(key));
        };
        line.push(go);
        waiting++;
        signal.addEventListener('abort', leave, { once: true });
      });
      return { waited: true, turn };
    },
  };
}

export type PerKeyQueue = ReturnType<typeof createPerKeyQueue>;
