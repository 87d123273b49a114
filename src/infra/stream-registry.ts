import type { Logger } from 'pino';
import { AppError } from '../common/errors.js';

/**
 * Streams' slots: the open streams of this instance, counted per key, user, organization and in
 * all. A revoked key's streams end at the next re-check (one query for all open keys); a client
 * that stops reading is disconnected after `idleTimeoutMs`; `drain` ends them all.
 */

/**
 * Why a stream's lease ended: its key was revoked, the server shuts down, its client fell further
 * behind than a stream may hold for it (`overflow`), or its response is over (`released`).
 */
export type StreamEndReason = 'revoked' | 'shutdown' | 'overflow' | 'released';

/** Who holds a stream: its slot counts against each of these. */
export interface StreamOwner {
  keyId: string;
  userId: string;
  organizationId: string;
}

/** The connection a stream is written to, as the registry watches it (see infra/client-watch.ts). */
export interface StreamClient {
  /** Runs the callback once the response is over (at once if it already is). */
  onDone(callback: () => void): void;
  /** How long bytes written to the client have waited without any being taken (0 while it keeps up). */
  stalledMs(): number;
  /** Closes the connection at once. */
  disconnect(): void;
}

/**
 * One open stream's slot: `signal` aborts (with a StreamEndReason) when the server ends the stream,
 * or when the slot is released, so whatever the stream holds is let go whichever way it ended.
 */
export interface StreamLease {
  readonly keyId: string;
  readonly signal: AbortSignal;
  /** Ends the stream for `reason`; `overflow` closes its connection at once. */
  end(reason: Exclude<StreamEndReason, 'released'>): void;
  /** Frees the slot; idempotent. */
  release(): void;
}

export interface StreamRegistryOptions {
  maxPerKey: number;
  maxPerUser: number;
  maxPerOrganization: number;
  maxTotal: number;
  /** A client whose connection has taken nothing of what waits for it this long is disconnected. */
  idleTimeoutMs: number;
  /** How often the keys of open streams are checked, so a revoked key's streams end within about this long. */
  recheckMs: number;
  /** The keys among `keyIds` that may still hold streams (e.g. not revoked). */
  activeKeys: (keyIds: string[]) => Promise<Set<string>>;
  log: Logger;
  /** Told of each refusal (for a metric). */
  onRefused?: () => void;
}

/**
 * How long a stream the server ended (revoked, shutdown) may take to deliver its last event before
 * its connection is closed: a client that is not reading never holds a slot or a shutdown.
 */
export const END_GRACE_MS = 1000;

/** Counts per name (a key, a user, an organization), dropping names that reach zero. */
class Tally {
  readonly counts = new Map<string, number>();
  get(name: string) {
    return this.counts.get(name) ?? 0;
  }
  add(name: string, delta: number) {
    const next = this.get(name) + delta;
    if (next <= 0) this.counts.delete(name);
    else this.counts.set(name, next);
  }
}

export function createStreamRegistry(options: StreamRegistryOptions) {
  return new StreamRegistry(options);
}

export class StreamRegistry {
  readonly #open = new Set<Lease>();
  readonly #perKey = new Tally();
  readonly #perUser = new Tally();
  readonly #perOrganization = new Tally();
  #draining = false;
  #timers: NodeJS.Timeout[] = [];
  #checking = false;

  constructor(private readonly options: StreamRegistryOptions) {}

  get size() {
    return this.#open.size;
  }

  /** A slot for `owner`'s new stream written to `client`, or `concurrency_limit`; released when the response is over. */
  open(owner: StreamOwner, client: StreamClient): StreamLease {
    this.#admit(owner);
    const lease: Lease = new Lease(owner, client, () => this.#forget(lease));
    this.#open.add(lease);
    this.#count(owner, 1);
    this.#startTimers();
    client.onDone(lease.release);
    return lease;
  }

  /** Ends every open stream and refuses new ones (shutdown). */
  drain() {
    this.#draining = true;
    for (const lease of this.#open) lease.end('shutdown');
  }

  #admit(owner: StreamOwner) {
    if (this.#draining) throw this.#refuse('The server is shutting down; reconnect.');
    const { maxPerKey, maxPerUser, maxPerOrganization, maxTotal } = this.options;
    if (this.#perKey.get(owner.keyId) >= maxPerKey) throw this.#refuse(`At most ${maxPerKey} open streams per key; close one first.`);
    if (this.#perUser.get(owner.userId) >= maxPerUser) throw this.#refuse(`At most ${maxPerUser} open streams per user; close one first.`);
    if (this.#perOrganization.get(owner.organizationId) >= maxPerOrganization)
      throw this.#refuse(`At most ${maxPerOrganization} open streams per organization on this server; close one first.`);
    if (this.#open.size >= maxTotal) throw this.#refuse('This server holds as many streams as it may; retry shortly.');
  }

  #refuse(message: string) {
    this.options.onRefused?.();
    return new AppError('concurrency_limit', message);
  }

  #count(owner: StreamOwner, delta: number) {
    this.#perKey.add(owner.keyId, delta);
    this.#perUser.add(owner.userId, delta);
    this.#perOrganization.add(owner.organizationId, delta);
  }

  #forget(lease: Lease) {
    this.#open.delete(lease);
    this.#count(lease.owner, -1);
    if (this.#open.size > 0) return;
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
  }

  #startTimers() {
    if (this.#timers.length) return;
    const { recheckMs, idleTimeoutMs } = this.options;
    // Fine enough that a stalled client is gone within about a second of its idle timeout.
    const stallCheckMs = Math.max(50, Math.min(1000, Math.floor(idleTimeoutMs / 4)));
    this.#timers = [
      setInterval(() => void this.#recheckKeys(), recheckMs).unref(),
      setInterval(() => this.#disconnectStalled(), stallCheckMs).unref(),
    ];
  }

  async #recheckKeys() {
    if (this.#checking || this.#open.size === 0) return;
    this.#checking = true;
    try {
      const asked = [...this.#perKey.counts.keys()];
      const active = await this.options.activeKeys(asked);
      const checked = new Set(asked);
      // A stream opened while the query ran, with a key it did not ask about, waits for the next check.
      for (const lease of this.#open) if (checked.has(lease.keyId) && !active.has(lease.keyId)) lease.end('revoked');
    } catch (error) {
      // The streams stay open until a check succeeds; each stream's key was valid when it opened.
      this.options.log.warn({ err: error }, 'could not re-check the keys of open streams');
    } finally {
      this.#checking = false;
    }
  }

  #disconnectStalled() {
    for (const lease of this.#open) if (lease.client.stalledMs() >= this.options.idleTimeoutMs) lease.client.disconnect();
  }
}

class Lease implements StreamLease {
  readonly keyId: string;
  readonly #controller = new AbortController();
  readonly signal = this.#controller.signal;
  #released = false;
  #grace: NodeJS.Timeout | undefined;

  constructor(
    readonly owner: StreamOwner,
    readonly client: StreamClient,
    private readonly onRelease: () => void,
  ) {
    this.keyId = owner.keyId;
  }

  /** An arrow function: handed to the client's `onDone` as it is. */
  readonly release = () => {
    if (this.#released) return;
    this.#released = true;
    clearTimeout(this.#grace);
    if (!this.signal.aborted) this.#controller.abort('released' satisfies StreamEndReason);
    this.onRelease();
  };

  end(reason: Exclude<StreamEndReason, 'released'>) {
    if (this.#released || this.signal.aborted) return;
    this.#controller.abort(reason);
    if (reason === 'overflow') return this.client.disconnect();
    this.#grace = setTimeout(() => this.client.disconnect(), END_GRACE_MS).unref();
  }
}
