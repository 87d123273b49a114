import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Whether the caller is still there to receive the response. `signal` aborts once it is seen
 * leaving (FIN, or the connection closing first): an in-flight slot listens to it. `onUndelivered`
 * runs once the response ended unwritten (a charge's reversal); a FIN alone does not decide that.
 */
export interface ClientWatch {
  readonly signal: AbortSignal;
  onUndelivered(callback: () => void): void;
  /** Runs the callback once the response is over, delivered or not (at once if it already is). */
  onDone(callback: () => void): void;
  /** How long written bytes have waited without the client taking any (0 while none wait); call it periodically. */
  stalledMs(): number;
  /** Closes the connection at once (a client that stopped reading, or held a stream too long). */
  disconnect(): void;
}

/**
 * Listens to the connection only from the first use of `signal`, `onUndelivered` or `onDone`: most
 * requests (reads) never ask, and listeners and a controller per request are measurable CPU.
 */
export function watchClient(request: IncomingMessage, response: ServerResponse): ClientWatch {
  return new WatchedClient(request.socket, response);
}

class WatchedClient implements ClientWatch {
  #controller: AbortController | undefined;
  #undelivered: Array<() => void> = [];
  #done: Array<() => void> = [];
  #over = false;
  #onEnd: (() => void) | undefined;
  /** The caller's FIN came before this request: it says nothing about this one (as a listener added now would not hear it). */
  readonly #endedBefore: boolean;
  #lastTaken = 0;
  #progressAt = performance.now();

  constructor(
    private readonly socket: Socket,
    private readonly response: ServerResponse,
  ) {
    this.#endedBefore = socket.readableEnded;
  }

  get signal() {
    return this.#watch().signal;
  }

  onUndelivered(callback: () => void) {
    this.#watch();
    if (this.#over && !this.response.writableFinished) callback();
    else if (!this.#over) this.#undelivered.push(callback);
  }

  onDone(callback: () => void) {
    this.#watch();
    if (this.#over) callback();
    else this.#done.push(callback);
  }

  stalledMs() {
    const now = performance.now();
    // Bytes the kernel accepted: what was written, less what still waits in the socket's buffers.
    const taken = this.socket.bytesWritten - this.socket.writableLength;
    if (this.response.writableLength === 0 || taken !== this.#lastTaken) {
      this.#lastTaken = taken;
      this.#progressAt = now;
    }
    return now - this.#progressAt;
  }

  disconnect() {
    this.socket.destroy();
  }

  /** The controller, listening from now on; what happened before is read off the socket and response. */
  #watch(): AbortController {
    if (this.#controller) return this.#controller;
    this.#controller = new AbortController();
    // The caller's end of the connection closing (FIN) is the first sign it left: the response
    // closes only later, once the host gives up on it (or has written it out).
    if (!this.socket.readableEnded) this.socket.once('end', (this.#onEnd = () => this.#leaving()));
    else if (!this.#endedBefore) this.#leaving();
    if (this.response.closed) this.#closed();
    else this.response.once('close', () => this.#closed());
    return this.#controller;
  }

  #leaving() {
    if (!this.#controller!.signal.aborted && !this.response.writableFinished) this.#controller!.abort();
  }

  #closed() {
    this.#over = true;
    if (this.#onEnd) this.socket.off('end', this.#onEnd);
    for (const callback of this.#done.splice(0)) callback();
    // 'close' also follows a response written in full: that one was delivered.
    if (this.response.writableFinished) this.#undelivered.length = 0;
    else {
      this.#leaving();
      for (const callback of this.#undelivered.splice(0)) callback();
    }
  }
}
