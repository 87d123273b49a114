/**
 * Server-Sent Events as GraphQL over SSE ("distinct connections mode", as graphql-yoga speaks it):
 * a comment first (so proxies and clients see the headers at once), `event: next` per result,
 * `event: complete` at the end, and a keep-alive comment every KEEP_ALIVE_MS. Both `/graphql` and
 * the gateway write their streams with this.
 */
const KEEP_ALIVE_MS = 15_000;

export const EVENT_STREAM_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  // Tells nginx-style proxies not to buffer the stream.
  'X-Accel-Buffering': 'no',
} as const;

/** Whether a request's Accept header asks for an event stream. */
export const acceptsEventStream = (accept: string | null | undefined) => /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept ?? '');

export interface EventStreamFormat<T> {
  /** The `next` event's data for a value of the source. */
  next(value: T): unknown;
  /** The last `next` event's data when the source fails (it then completes). */
  error(error: unknown): unknown;
  /**
   * Encoded `next` events by value, for values shared between streams (the same object for the
   * same data, e.g. shared-subscribe.ts's results): each is encoded once, and its bytes shared.
   * One per way of formatting (per route).
   */
  encoded?: WeakMap<object, Uint8Array>;
}

const encoder = new TextEncoder();
const COMMENT = encoder.encode(':\n\n');
const COMPLETE = encoder.encode('event: complete\ndata:\n\n');
const nextEvent = (data: unknown) => encoder.encode(`event: next\ndata: ${JSON.stringify(data)}\n\n`);

function encodeNext<T>(format: EventStreamFormat<T>, value: T): Uint8Array {
  if (!format.encoded || typeof value !== 'object' || value === null) return nextEvent(format.next(value));
  let chunk = format.encoded.get(value);
  if (!chunk) format.encoded.set(value, (chunk = nextEvent(format.next(value))));
  return chunk;
}

/**
 * The source as an SSE body. It is pulled only as fast as the client reads (the host writes the
 * next chunk when the socket drains), so a slow client holds at most what its source buffers; a
 * client that goes away cancels the body, which returns the source (releasing what it holds).
 * A client that stops reading is disconnected by the stream registry (infra/stream-registry.ts), which
 * watches the connection itself: the host waiting for the socket to drain would never notice.
 */
export function eventStream<T>(
  source: AsyncIterator<T>,
  format: EventStreamFormat<T>,
  keepAliveMs = KEEP_ALIVE_MS,
): ReadableStream<Uint8Array> {
  let keepAlive: NodeJS.Timeout | undefined;
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
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
