import type { Logger } from 'pino';
import { AppError } from '../common/errors.js';

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

type OpenLease = StreamLease & { owner: StreamOwner; client: StreamClient };

/** Counts per name (a key, a user, an organization), dropping names that reach zero. */
function tally() {
  const counts = new Map<string, number>();
  return {
    counts,
    get: (name: string) => counts.get(name) ?? 0,
    add(name: string, delta: number) {
      const next = (counts.get(name) ?? 0) + delta;
      if (next <= 0) counts.delete(name);
      else counts.set(name, next);
    },
  };
}

/**
 * Open long-lived streams on this instance, per key, per user, per organization and in total,
 * each a lease released when its response is over. A revoked key's streams end at the next check:
 * one query for every open key at once each `recheckMs`, whatever the number of streams. A client
 * that stops taking what is written to it is disconnected after `idleTimeoutMs`, and a stream the
 * server ended is disconnected if it has not finished END_GRACE_MS later. `drain` ends them all
 * (shutdown) and refuses new ones.
 */
export function createStreamRegistry(options: StreamRegistryOptions) {
  const { recheckMs, idleTimeoutMs, activeKeys, log } = options;
  const open = new Set<OpenLease>();
  const perKey = tally();
  const perUser = tally();
  const perOrganization = tally();
  let draining = false;
  let timers: NodeJS.Timeout[] = [];
  let checking = false;

  const refuse = (message: string) => {
    options.onRefused?.();
    return new AppError('concurrency_limit', message);
  };

  async function recheck() {
    if (checking || open.size === 0) return;
    checking = true;
    try {
      const asked = [...perKey.counts.keys()];
      const active = await activeKeys(asked);
      const checked = new Set(asked);
      // A stream opened while the query ran, with a key it did not ask about, waits for the next check.
      for (const lease of open) if (checked.has(lease.keyId) && !active.has(lease.keyId)) lease.end('revoked');
    } catch (error) {
      // The streams stay open until a check succeeds; each stream's key was valid when it opened.
      log.warn({ err: error }, 'could not re-check the keys of open streams');
    } finally {
      checking = false;
    }
  }

  function disconnectStalled() {
    for (const lease of open) if (lease.client.stalledMs() >= idleTimeoutMs) lease.client.disconnect();
  }

  function admit(owner: StreamOwner) {
    if (draining) throw refuse('The server is shutting down; reconnect.');
    const { maxPerKey, maxPerUser, maxPerOrganization, maxTotal } = options;
    if (perKey.get(owner.keyId) >= maxPerKey) throw refuse(`At most ${maxPerKey} open streams per key; close one first.`);
    if (perUser.get(owner.userId) >= maxPerUser) throw refuse(`At most ${maxPerUser} open streams per user; close one first.`);
    if (perOrganization.get(owner.organizationId) >= maxPerOrganization)
      throw refuse(`At most ${maxPerOrganization} open streams per organization on this server; close one first.`);
    if (open.size >= maxTotal) throw refuse('This server holds as many streams as it may; retry shortly.');
  }

  function count(owner: StreamOwner, delta: number) {
    perKey.add(owner.keyId, delta);
    perUser.add(owner.userId, delta);
    perOrganization.add(owner.organizationId, delta);
  }

  function startTimers() {
    if (timers.length) return;
    // Fine enough that a stalled client is gone within about a second of its idle timeout.
    const stallCheckMs = Math.max(50, Math.min(1000, Math.floor(idleTimeoutMs / 4)));
    timers = [setInterval(() => void recheck(), recheckMs).unref(), setInterval(disconnectStalled, stallCheckMs).unref()];
  }

  return {
    get size() {
      return open.size;
    },
    /** A slot for `owner`'s new stream written to `client`, or `concurrency_limit`; released when the response is over. */
    open(owner: StreamOwner, client: StreamClient): StreamLease {
      admit(owner);
      const controller = new AbortController();
      let released = false;
      let grace: NodeJS.Timeout | undefined;
      const lease: OpenLease = {
        owner,
        client,
        keyId: owner.keyId,
        signal: controller.signal,
        release() {
          if (released) return;
          released = true;
          clearTimeout(grace);
          if (!controller.signal.aborted) controller.abort('released' satisfies StreamEndReason);
          open.delete(lease);
          count(owner, -1);
          if (open.size > 0) return;
          for (const timer of timers) clearInterval(timer);
          timers = [];
        },
        end(reason) {
          if (released || controller.signal.aborted) return;
          controller.abort(reason);
          if (reason === 'overflow') return client.disconnect();
          grace = setTimeout(() => client.disconnect(), END_GRACE_MS).unref();
        },
      };
      open.add(lease);
      count(owner, 1);
      startTimers();
      client.onDone(lease.release);
      return lease;
    },
    /** Ends every open stream and refuses new ones. */
    drain() {
      draining = true;
      for (const lease of open) lease.end('shutdown');
    },
  };
}

export type StreamRegistry = ReturnType<typeof createStreamRegistry>;
