import { describe, expect, it } from 'vitest';
import { createBoundedQueue } from '../../src/infra/bounded-queue.js';
import { eventStream, STALLED_TICKS_MAX } from '../../src/server/streams/event-stream.js';

/** The pieces that keep a stream bounded: the per-stream event queue and the SSE writer. */

describe('bounded queue', () => {
  it('delivers in order, refuses past its bound, and ends after what it holds', async () => {
    let closed = 0;
    const queue = createBoundedQueue<number>(2, () => closed++);
    expect([queue.push(1), queue.push(2), queue.push(3)]).toEqual([true, true, false]);
    queue.end();
    expect(queue.push(4)).toBe(false);
    expect(await queue.next()).toEqual({ value: 1, done: false });
    expect(await queue.next()).toEqual({ value: 2, done: false });
    expect(closed).toBe(0);
    expect(await queue.next()).toEqual({ value: undefined, done: true });
    expect(closed).toBe(1);
  });

  it('hands a value straight to a waiting consumer, and fails after what it holds', async () => {
    const queue = createBoundedQueue<string>(1);
    const waiting = queue.next();
    expect(queue.push('a')).toBe(true);
    expect(await waiting).toEqual({ value: 'a', done: false });
    queue.push('b');
    queue.fail(new Error('revoked'));
    expect(await queue.next()).toEqual({ value: 'b', done: false });
    await expect(queue.next()).rejects.toThrow('revoked');
  });

  it('return() wakes a pending next, drops what is buffered and closes exactly once', async () => {
    let closed = 0;
    const queue = createBoundedQueue<number>(5, () => closed++);
    const pending = queue.next();
    await queue.return();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(queue.push(1)).toBe(false);
    await queue.return();
    queue.end();
    expect(closed).toBe(1);

    const full = createBoundedQueue<number>(5, () => closed++);
    full.push(1);
    full.push(2);
    await full.return();
    expect(await full.next()).toEqual({ value: undefined, done: true });
    expect(closed).toBe(2);
  });
});

describe('SSE writer', () => {
  const read = async (stream: ReadableStream<Uint8Array>) => {
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of stream) text += decoder.decode(chunk);
    return text;
  };

  it('writes an opening comment, next events, a last error event and complete', async () => {
    const queue = createBoundedQueue<number>(5);
    queue.push(1);
    queue.fail(new Error('gone'));
    const text = await read(eventStream(queue, { next: (n) => ({ n }), error: (e) => ({ error: (e as Error).message }) }));
    expect(text).toBe(':\n\nevent: next\ndata: {"n":1}\n\nevent: next\ndata: {"error":"gone"}\n\nevent: complete\ndata:\n\n');
  });

  it('sends keep-alive comments while idle', async () => {
    const queue = createBoundedQueue<number>(5);
    const reader = eventStream(queue, { next: (n) => n, error: () => null }, 20).getReader();
    const decoder = new TextDecoder();
    const started = performance.now();
    // The opening comment, then one per tick.
    const chunks = [];
    for (let i = 0; i < 3; i++) chunks.push(decoder.decode((await reader.read()).value));
    expect(chunks).toEqual([':\n\n', ':\n\n', ':\n\n']);
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
    await reader.cancel();
    expect(queue.closed).toBe(true);
  });

  it('cuts off a client that stops reading, and returns the source', async () => {
    let returned = false;
    const queue = createBoundedQueue<number>(5, () => (returned = true));
    const stream = eventStream(queue, { next: (n) => n, error: () => null }, 20);
    // Nobody reads: the opening comment stays queued, tick after tick.
    const started = performance.now();
    while (!returned && performance.now() - started < 2000) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(returned).toBe(true);
    // Not before STALLED_TICKS_MAX ticks.
    expect(performance.now() - started).toBeGreaterThanOrEqual(20 * STALLED_TICKS_MAX - 5);
    const reader = stream.getReader();
    await expect(reader.read().then(() => reader.read())).rejects.toThrow('stopped reading');
  });
});
