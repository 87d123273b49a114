import { describe, expect, it } from 'vitest';
import { createBoundedQueue } from '../../src/infra/bounded-queue.js';
import { GraphQLObjectType, GraphQLSchema, GraphQLString, parse, type ExecutionResult } from 'graphql';
import { eventStream } from '../../src/http/streams/event-stream.js';
import { sharedSubscribe } from '../../src/http/streams/shared-subscribe.js';

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

  it('ends quietly when its client leaves while a pull waits for the source', async () => {
    const queue = createBoundedQueue<number>(5);
    const reader = eventStream(queue, { next: (n) => n, error: () => null }).getReader();
    await reader.read(); // the opening comment
    const pending = reader.read(); // a pull now waits for the source
    await new Promise((resolve) => setTimeout(resolve, 10));
    await reader.cancel();
    expect(queue.closed).toBe(true);
    expect(await pending).toEqual({ done: true, value: undefined });
  });

  it('encodes a value shared between streams once, and hands every stream the same bytes', async () => {
    const encoded = new WeakMap<object, Uint8Array>();
    let formatted = 0;
    const format = { encoded, next: (v: { n: number }) => (formatted++, v), error: () => null };
    const shared = { n: 1 };
    const [a, b] = [createBoundedQueue<{ n: number }>(5), createBoundedQueue<{ n: number }>(5)];
    const [ra, rb] = [eventStream(a, format).getReader(), eventStream(b, format).getReader()];
    await Promise.all([ra.read(), rb.read()]);
    a.push(shared);
    b.push(shared);
    const [ca, cb] = [(await ra.read()).value, (await rb.read()).value];
    expect(ca).toBe(cb);
    expect(new TextDecoder().decode(ca)).toBe('event: next\ndata: {"n":1}\n\n');
    expect(formatted).toBe(1);
    await Promise.all([ra.cancel(), rb.cancel()]);
  });
});

describe('shared subscriptions', () => {
  // Each stream's source is its own queue of the shared events, as the notification hub hands them out.
  const sources: Array<ReturnType<typeof createBoundedQueue<{ value: string }>>> = [];
  let resolved = 0;
  const Event = new GraphQLObjectType({
    name: 'Event',
    fields: { value: { type: GraphQLString, resolve: (event: { value: string }) => (resolved++, event.value) } },
  });
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString } } }),
    subscription: new GraphQLObjectType({
      name: 'Subscription',
      fields: { events: { type: Event, subscribe: () => sources[sources.push(createBoundedQueue(10)) - 1], resolve: (event) => event } },
    }),
  });
  const user = (scopes: string[]) => ({ principal: { type: 'user', userId: 'u1', keyId: 'k', scopes: new Set(scopes) } });

  it('executes a source event once for the streams that read it alike, and apart for another document or scopes', async () => {
    const document = parse('subscription { events { value } }');
    const open = async (contextValue: unknown, doc = document) =>
      (await sharedSubscribe({ schema, document: doc, contextValue })) as AsyncIterableIterator<ExecutionResult>;
    const [a, b] = [await open(user(['READ'])), await open(user(['READ']))];
    const other = await open(user(['READ', 'WRITE']));
    const event = { value: 'x' };
    const [ra, rb, ro] = [a.next(), b.next(), other.next()];
    for (const source of sources) source.push(event);
    const [first, second, third] = await Promise.all([ra, rb, ro]);
    expect(first.value).toBe(second.value);
    expect(first.value).toEqual({ data: { events: { value: 'x' } } });
    expect(third.value).not.toBe(first.value);
    expect(resolved).toBe(2);
    await Promise.all([a.return?.(), b.return?.(), other.return?.()]);
  });
});
