import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** `signal` aborts once the caller leaves (FIN or close); `onUndelivered` (a charge's reversal) needs the response to end unwritten. */
export interface ClientWatch {
  readonly signal: AbortSignal;
  onUndelivered(callback: () => void): void;
  /** Delivered or not; at once if already over. */
  onDone(callback: () => void): void;
  /** Progress is sampled on each call, so call it periodically. */
  stalledMs(): number;
  disconnect(): void;
}

/** Listens lazily: most requests never ask, and listeners per request cost measurable CPU. */
export function watchClient(request: IncomingMessage, response: ServerResponse): ClientWatch {
  return new WatchedClient(request.socket, response);
}

class WatchedClient implements ClientWatch {
  #controller: AbortController | undefined;
  #undelivered: Array<() => void> = [];
  #done: Array<() => void> = [];
  #over = false;
  #onEnd: (() => void) | undefined;
  /** A FIN before this request says nothing about this one. */
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
    // Bytes the kernel accepted.
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

  /** What happened before the first call is read off the socket and response. */
  #watch(): AbortController {
    if (this.#controller) return this.#controller;
    this.#controller = new AbortController();
    // FIN is the first sign the caller left; the response closes only once the host gives up on it.
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
