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
}

/**
 * Keep-alive ticks a written chunk may wait unread before the client counts as stalled and the
 * stream is ended (its connection destroyed): a client that stops reading is not held open forever.
 */
export const STALLED_TICKS_MAX = 2;

/**
 * The source as an SSE body. It is pulled only as fast as the client reads (the host writes the
 * next chunk when the socket drains), so a slow client holds at most what its source buffers; a
 * client that goes away cancels the body, which returns the source (releasing what it holds); a
 * client whose socket stays full for STALLED_TICKS_MAX keep-alive ticks is cut off.
 */
export function eventStream<T>(
  source: AsyncIterator<T>,
  format: EventStreamFormat<T>,
  keepAliveMs = KEEP_ALIVE_MS,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let keepAlive: NodeJS.Timeout | undefined;
  let stalledTicks = 0;
  const event = (data: unknown) => encoder.encode(`event: next\ndata: ${JSON.stringify(data)}\n\n`);
  const complete = encoder.encode('event: complete\ndata:\n\n');
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(':\n\n'));
      keepAlive = setInterval(() => {
        if (controller.desiredSize === null) return clearInterval(keepAlive);
        // Only into an empty queue: a client that is not reading gets no pile of comments.
        if (controller.desiredSize > 0) {
          stalledTicks = 0;
          return controller.enqueue(encoder.encode(':\n\n'));
        }
        if (++stalledTicks < STALLED_TICKS_MAX) return;
        clearInterval(keepAlive);
        // The host destroys the response of a body that errors.
        controller.error(new Error('The client stopped reading the stream.'));
        void source.return?.();
      }, keepAliveMs);
    },
    async pull(controller) {
      try {
        const result = await source.next();
        if (!result.done) return controller.enqueue(event(format.next(result.value)));
        controller.enqueue(complete);
      } catch (error) {
        controller.enqueue(event(format.error(error)));
        controller.enqueue(complete);
      }
      clearInterval(keepAlive);
      controller.close();
    },
    async cancel() {
      clearInterval(keepAlive);
      await source.return?.();
    },
  });
}
