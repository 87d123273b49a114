import type { Logger } from 'pino';
import { AppError } from '../common/errors.js';

/** Per-instance stream slots. Revocation is found by one periodic query for all open keys, not per stream. */

/** `overflow`: the client fell further behind than a stream may buffer; `released`: the response is over. */
export type StreamEndReason = 'revoked' | 'shutdown' | 'overflow' | 'released';

/** A slot counts against each of these. */
export interface StreamOwner {
  keyId: string;
  userId: string;
  organizationId: string;
}

/** See infra/client-watch.ts. */
export interface StreamClient {
  /** At once if the response is already over. */
  onDone(callback: () => void): void;
  /** 0 while the client keeps up. */
  stalledMs(): number;
  disconnect(): void;
}

/** `signal` aborts on release too, so whatever the stream holds is let go whichever way it ended. */
export interface StreamLease {
  readonly keyId: string;
  readonly signal: AbortSignal;
  /** `overflow` closes the connection at once; others get END_GRACE_MS. */
  end(reason: Exclude<StreamEndReason, 'released'>): void;
  /** Idempotent. */
  release(): void;
}

export interface StreamRegistryOptions {
  maxPerKey: number;
  maxPerUser: number;
  maxPerOrganization: number;
  maxTotal: number;
  idleTimeoutMs: number;
  /** Bounds how long a revoked key's streams live on. */
  recheckMs: number;
  activeKeys: (keyIds: string[]) => Promise<Set<string>>;
  log: Logger;
  onRefused?: () => void;
}

/** Time to deliver the last event before the connection closes, so a client not reading cannot hold up a shutdown. */
export const END_GRACE_MS = 1000;

/** Drops names that reach zero, so the map stays bounded by open streams. */
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

  open(owner: StreamOwner, client: StreamClient): StreamLease {
    this.#admit(owner);
    const lease: Lease = new Lease(owner, client, () => this.#forget(lease));
    this.#open.add(lease);
    this.#count(owner, 1);
    this.#startTimers();
    client.onDone(lease.release);
    return lease;
  }

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

  /** Arrow function: handed to `onDone` unbound. */
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
