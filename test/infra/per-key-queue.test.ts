import { describe, expect, it } from 'vitest';
import { createPerKeyQueue, type ReleaseTurn } from '../../src/infra/per-key-queue.js';

/** The per-key queue behind a user's marks (notifications/feed-writes.ts), on its own. */
describe('createPerKeyQueue', () => {
  const live = () => new AbortController().signal;

  it('gives turns one at a time per key, in order of arrival, and refuses past maxWaiting', async () => {
    const queue = createPerKeyQueue(2);
    const first = queue.enter('a', live())!;
    const second = queue.enter('a', live())!;
    const third = queue.enter('a', live())!;
    expect([first.waited, second.waited, third.waited]).toEqual([false, true, true]);
    expect(queue.enter('a', live())).toBeNull();
    // Another key has its own turn.
    expect(queue.enter('b', live())?.waited).toBe(false);

    const order: string[] = [];
    void second.turn.then((release) => (order.push('second'), release()));
    void third.turn.then((release) => (order.push('third'), release()));
    const release = await first.turn;
    expect(queue.waiting).toBe(2);
    release();
    release(); // idempotent: gives the turn away once
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['second', 'third']);
    expect(queue.waiting).toBe(0);
    expect(queue.busyKeys).toBe(1); // 'b' still holds its turn
  });

  it('lets a waiting caller whose signal aborts leave: its place is free at once and its turn never comes', async () => {
    const queue = createPerKeyQueue(1);
    const first = queue.enter('a', live())!;
    const leaving = new AbortController();
    const waiting = queue.enter('a', leaving.signal)!;
    expect(queue.enter('a', live())).toBeNull();
    leaving.abort(new Error('gone'));
    await expect(waiting.turn).rejects.toThrow('gone');
    expect(queue.waiting).toBe(0);
    const next = queue.enter('a', live())!;
    expect(next.waited).toBe(true);
    (await first.turn)();
    const release: ReleaseTurn = await next.turn;
    release();
    // An idle key keeps no entry.
    expect(queue.busyKeys).toBe(0);
  });
});
