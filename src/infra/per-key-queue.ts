/** Gives the caller's turn back to its key's queue: the next caller waiting goes on. Idempotent. */
export type ReleaseTurn = () => void;

/** A caller's place in its key's queue. */
export interface QueuePlace {
  /** Whether another caller held the key's turn when this one entered (so its work starts later). */
  readonly waited: boolean;
  /**
   * Resolves with the release once every caller before this one has released its turn; rejects
   * with the signal's reason if the caller's signal aborts first (its place is given up).
   */
  readonly turn: Promise<ReleaseTurn>;
}

/**
 * One caller at a time per key, the others waiting in this process holding nothing but their place
 * (no connection, no lock). Past `maxWaiting` per key `enter` refuses (null); idle keys take no memory.
 */
export function createPerKeyQueue(maxWaiting: number) {
  // The callers waiting behind the turn's holder, first in line first; present while the turn is held.
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
    /** Keys whose turn is held: idle keys are not kept. */
    get busyKeys(): number {
      return lines.size;
    },
    /** Callers waiting for their turn, over all keys. */
    get waiting(): number {
      return waiting;
    },
    /** A place in `key`'s queue, or null when `maxWaiting` callers already wait there. */
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
