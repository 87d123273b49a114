/** Past `max` weight, `push` answers false and the producer decides, rather than buffering for a slow consumer. */
export interface BoundedQueue<T> extends AsyncIterableIterator<T> {
  push(value: T): boolean;
  /** Both finish after the buffered values. */
  end(): void;
  fail(error: unknown): void;
  /** The consumer leaving: drops what is buffered. */
  return(): Promise<IteratorResult<T>>;
  readonly closed: boolean;
}

const done = (): IteratorResult<never> => ({ value: undefined, done: true });

/** `onClose` runs exactly once, however the queue ended. */
export function createBoundedQueue<T>(
  max: number,
  onClose: () => void = () => undefined,
  weigh: (value: T) => number = () => 1,
): BoundedQueue<T> {
  return new WeighedQueue(max, onClose, weigh);
}

class WeighedQueue<T> implements BoundedQueue<T> {
  #buffer: T[] = [];
  #weight = 0;
  #waiter: { resolve: (result: IteratorResult<T>) => void; reject: (error: unknown) => void } | null = null;
  #ending: { error?: unknown } | null = null;
  #closed = false;

  constructor(
    private readonly max: number,
    private readonly onClose: () => void,
    private readonly weigh: (value: T) => number,
  ) {}

  get closed() {
    return this.#closed || this.#ending !== null;
  }

  push(value: T): boolean {
    if (this.closed) return false;
    const waiter = this.#takeWaiter();
    if (waiter) {
      waiter.resolve({ value, done: false });
      return true;
    }
    const weight = this.weigh(value);
    if (this.#weight + weight > this.max) return false;
    this.#buffer.push(value);
    this.#weight += weight;
    return true;
  }

  end() {
    this.#finish({});
  }

  fail(error: unknown) {
    this.#finish({ error });
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#buffer.length) {
      const value = this.#buffer.shift()!;
      this.#weight -= this.weigh(value);
      return Promise.resolve({ value, done: false });
    }
    if (this.#closed) return Promise.resolve(done());
    if (this.#ending) return this.#closeWith(this.#ending);
    return new Promise<IteratorResult<T>>((resolve, reject) => (this.#waiter = { resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    const waiter = this.#takeWaiter();
    this.#close();
    waiter?.resolve(done());
    return Promise.resolve(done());
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  #takeWaiter() {
    const waiter = this.#waiter;
    this.#waiter = null;
    return waiter;
  }

  #finish(ending: { error?: unknown }) {
    if (this.closed) return;
    this.#ending = ending;
    // A consumer already waiting hears of the end now; otherwise its next `next()` does.
    if (!this.#waiter || this.#buffer.length) return;
    const waiter = this.#takeWaiter()!;
    this.#close();
    if ('error' in ending) waiter.reject(ending.error);
    else waiter.resolve(done());
  }

  #closeWith(ending: { error?: unknown }): Promise<IteratorResult<T>> {
    this.#close();
    return 'error' in ending ? Promise.reject(ending.error) : Promise.resolve(done());
  }

  #close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#buffer.length = 0;
    this.#weight = 0;
    this.onClose();
  }
}
