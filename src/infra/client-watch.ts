import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Whether the caller is still there to receive the response. `signal` aborts as soon as the caller
 * is seen leaving (its end of the connection closing, or the connection closing before the
 * response was fully written): work that must not outlive its caller (an in-flight slot) listens
 * to it. `onUndelivered` runs its callback once the response is over without having been written
 * in full, or at once if that has already happened: work that must not stand without a delivered
 * response (a charge) registers its reversal there. A caller's FIN alone does not decide that: a
 * response already handed to the connection is still written out to a caller that half-closed.
 */
export interface ClientWatch {
  readonly signal: AbortSignal;
  onUndelivered(callback: () => void): void;
  /** Runs the callback once the response is over, delivered or not (at once if it already is). */
  onDone(callback: () => void): void;
  /**
   * How long bytes written to the response have waited in this process without the client taking
   * any (0 while nothing waits): a long-lived response's measure of a client that stopped reading.
   * Measured between calls, so call it periodically.
   */
  stalledMs(): number;
  /** Closes the connection at once (a client that stopped reading, or held a stream too long). */
  disconnect(): void;
}

export function watchClient(request: IncomingMessage, response: ServerResponse): ClientWatch {
  const controller = new AbortController();
  const pending: Array<() => void> = [];
  const done: Array<() => void> = [];
  let over = false;
  const leaving = () => {
    if (!controller.signal.aborted && !response.writableFinished) controller.abort();
  };
  // The caller's end of the connection closing (FIN) is the first sign it left: the response
  // closes only later, once the host gives up on it (or has written it out).
  const socket = request.socket;
  socket.once('end', leaving);
  const onClose = () => {
    over = true;
    socket.off('end', leaving);
    for (const callback of done.splice(0)) callback();
    // 'close' also follows a response written in full: that one was delivered.
    if (response.writableFinished) pending.length = 0;
    else {
      leaving();
      for (const callback of pending.splice(0)) callback();
    }
  };
  // A connection that closed before this watch began (the caller left while we authenticated)
  // fires no further 'close' event.
  if (response.closed) onClose();
  else response.once('close', onClose);
  // Bytes the kernel accepted: what was written, less what still waits in the socket's buffers.
  const taken = () => socket.bytesWritten - socket.writableLength;
  let lastTaken = 0;
  let progressAt = performance.now();
  return {
    signal: controller.signal,
    stalledMs() {
      const now = performance.now();
      const sent = taken();
      if (response.writableLength === 0 || sent !== lastTaken) {
        lastTaken = sent;
        progressAt = now;
      }
      return now - progressAt;
    },
    disconnect() {
      socket.destroy();
    },
    onUndelivered(callback) {
      if (over && !response.writableFinished) callback();
      else if (!over) pending.push(callback);
    },
    onDone(callback) {
      if (over) callback();
      else done.push(callback);
    },
  };
}
