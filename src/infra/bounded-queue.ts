/**
 * An async iterator fed by pushes, holding undelivered values that weigh at most `max` in all
 * (`weigh`: 1 each unless given, e.g. their size in bytes): a consumer that falls further behind
 * is not buffered for (`push` answers false and the producer decides, e.g. ends the stream). `end` finishes it after the buffered values; `fail` after them with an error.
 * `return()` (the consumer leaving) ends it at once, waking a pending `next()`, and runs `onClose`
 * exactly once, however it ended.
 */
export interface BoundedQueue<T> extends AsyncIterableIterator<T> {
  push(value: T): boolean;
  end(): void;
  fail(error: unknown): void;
  /** Ends it at once, dropping what is buffered. */
  return(): Promise<IteratorResult<T>>;
  readonly closed: boolean;
}

export function createBoundedQueue<T>(
  max: number,
  onClose: () => void = () => undefined,
  weigh: (value: T) => number = () => 1,
): BoundedQueue<T> {
  const buffer: T[] = [];
  let weight = 0;
  let waiting: ((result: IteratorResult<T>) => void) | null = null;
  let waitingFail: ((error: unknown) => void) | null = null;
  let ending: { error?: unknown } | null = null;
  let closed = false;

  const close = () => {
    if (closed) return;
    closed = true;
    buffer.length = 0;
    weight = 0;
    onClose();
  };
  const settleWaiter = () => {
    if (!waiting || !ending || buffer.length) return;
    const [resolve, reject] = [waiting, waitingFail!];
    waiting = waitingFail = null;
    close();
    if ('error' in ending) reject(ending.error);
    else resolve({ value: undefined, done: true });
  };

  const queue: BoundedQueue<T> = {
    get closed() {
      return closed || ending !== null;
    },
    push(value) {
      if (closed || ending) return false;
      if (waiting) {
        const resolve = waiting;
        waiting = waitingFail = null;
        resolve({ value, done: false });
        return true;
      }
      const valueWeight = weigh(value);
      if (weight + valueWeight > max) return false;
      buffer.push(value);
      weight += valueWeight;
      return true;
    },
    end() {
      if (closed || ending) return;
      ending = {};
      settleWaiter();
    },
    fail(error) {
      if (closed || ending) return;
      ending = { error };
      settleWaiter();
    },
    next() {
      if (buffer.length) {
        const value = buffer.shift()!;
        weight -= weigh(value);
        return Promise.resolve({ value, done: false });
      }
      if (closed) return Promise.resolve({ value: undefined, done: true });
      if (ending) {
        close();
        return 'error' in ending ? Promise.reject(ending.error) : Promise.resolve({ value: undefined, done: true });
      }
      return new Promise<IteratorResult<T>>((resolve, reject) => {
        waiting = resolve;
        waitingFail = reject;
      });
    },
    return() {
      const resolve = waiting;
      waiting = waitingFail = null;
      close();
      resolve?.({ value: undefined, done: true });
      return Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]() {
      return queue;
    },
  };
  return queue;
}
