/** A source as Server-Sent Events (GraphQL over SSE, distinct connections mode), for `/graphql` and REST alike. */
const KEEP_ALIVE_MS = 15_000;

export const EVENT_STREAM_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  // Tells nginx-style proxies not to buffer the stream.
  'X-Accel-Buffering': 'no',
} as const;

/** A request's Last-Event-ID header (what EventSource sends when it reconnects), if it sent one. */
export const lastEventIdOf = (request: { headers: Record<string, string | string[] | undefined> }) => {
  const value = request.headers['last-event-id'];
  return typeof value === 'string' ? value : undefined;
};

/** Whether a request's Accept header asks for an event stream. */
export const acceptsEventStream = (accept: string | null | undefined) => /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept ?? '');

export interface EventStreamFormat<T> {
  /** The `next` event's data for a value of the source. */
  next(value: T): unknown;
  /** The `id` of the `next` event of a value, if it has one (a client resumes from it: Last-Event-ID). */
  id?(value: T): string | undefined;
  /** The last `next` event's data when the source fails (it then completes). */
  error(error: unknown): unknown;
  /** Encoded `next` events of values shared between streams (shared-subscribe.ts), one map per route. */
  encoded?: WeakMap<object, Uint8Array>;
}

const encoder = new TextEncoder();
const COMMENT = encoder.encode(':\n\n');
const COMPLETE = encoder.encode('event: complete\ndata:\n\n');
// An id with a line break would end its line early: ids are ours, but never trusted to be one line.
const idLine = (id: string | undefined) => (id && !/[\r\n]/.test(id) ? `id: ${id}\n` : '');
const nextEvent = (data: unknown, id?: string) => encoder.encode(`event: next\n${idLine(id)}data: ${JSON.stringify(data)}\n\n`);

function encodeNext<T>(format: EventStreamFormat<T>, value: T): Uint8Array {
  const encode = () => nextEvent(format.next(value), format.id?.(value));
  if (!format.encoded || typeof value !== 'object' || value === null) return encode();
  let chunk = format.encoded.get(value);
  if (!chunk) format.encoded.set(value, (chunk = encode()));
  return chunk;
}

/** The source as an SSE body, pulled only as fast as the client reads; a client leaving returns the source. */
export function eventStream<T>(
  source: AsyncIterator<T>,
  format: EventStreamFormat<T>,
  keepAliveMs = KEEP_ALIVE_MS,
): ReadableStream<Uint8Array> {
  let keepAlive: NodeJS.Timeout | undefined;
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      // A comment first, so proxies and clients see the headers at once.
      controller.enqueue(COMMENT);
      keepAlive = setInterval(() => {
        if (controller.desiredSize === null) return clearInterval(keepAlive);
        // Only into an empty queue: a client that is not reading gets no pile of comments.
        if (controller.desiredSize > 0) controller.enqueue(COMMENT);
      }, keepAliveMs);
    },
    async pull(controller) {
      let last: Uint8Array | undefined;
      try {
        const result = await source.next();
        if (cancelled) return;
        if (!result.done) return controller.enqueue(encodeNext(format, result.value));
      } catch (error) {
        if (cancelled) return;
        last = nextEvent(format.error(error));
      }
      clearInterval(keepAlive);
      if (last) controller.enqueue(last);
      controller.enqueue(COMPLETE);
      controller.close();
    },
    async cancel() {
      // The client left while a pull waited for the source: that pull must not write any more.
      cancelled = true;
      clearInterval(keepAlive);
      await source.return?.();
    },
  });
}
