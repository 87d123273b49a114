import type { Logger } from 'pino';
import { AppError } from '../common/errors.js';

/** Why a stream's lease ended: its key was revoked, the server shuts down, or its response is over (`released`). */
export type StreamEndReason = 'revoked' | 'shutdown' | 'released';

/**
 * One open stream's slot: `signal` aborts (with a StreamEndReason) when the server ends the stream,
 * or when the slot is released, so whatever the stream holds is let go whichever way it ended.
 */
export interface StreamLease {
  readonly keyId: string;
  readonly signal: AbortSignal;
  /** Frees the slot; idempotent. */
  release(): void;
}

export interface StreamRegistryOptions {
  maxPerKey: number;
  maxTotal: number;
  /** How often the keys of open streams are checked, so a revoked key's streams end within about this long. */
  recheckMs: number;
  /** The keys among `keyIds` that may still hold streams (e.g. not revoked). */
  activeKeys: (keyIds: string[]) => Promise<Set<string>>;
  log: Logger;
  /** Told of each refusal (for a metric). */
  onRefused?: () => void;
}

/**
 * Open long-lived streams on this instance, per key and in total, each a lease released when its
 * stream ends. A revoked key's streams end at the next check: one query for every open key at
 * once each `recheckMs`, whatever the number of streams. `drain` ends them all (shutdown) and
 * refuses new ones.
 */
export function createStreamRegistry(options: StreamRegistryOptions) {
  const { maxPerKey, maxTotal, recheckMs, activeKeys, log } = options;
  const open = new Set<StreamLease & { end(reason: StreamEndReason): void }>();
  const perKey = new Map<string, number>();
  let draining = false;
  let timer: NodeJS.Timeout | null = null;
  let checking = false;

  const refuse = (message: string) => {
    options.onRefused?.();
    return new AppError('concurrency_limit', message);
  };

  async function recheck() {
    if (checking || open.size === 0) return;
    checking = true;
    try {
      const asked = [...perKey.keys()];
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

  return {
    get size() {
      return open.size;
    },
    /** A slot for `keyId`'s new stream, or `concurrency_limit`. */
    open(keyId: string): StreamLease {
      if (draining) throw refuse('The server is shutting down; reconnect.');
      const held = perKey.get(keyId) ?? 0;
      if (held >= maxPerKey) throw refuse(`At most ${maxPerKey} open streams per key; close one first.`);
      if (open.size >= maxTotal) throw refuse('This server holds as many streams as it may; retry shortly.');
      const controller = new AbortController();
      let released = false;
      const lease = {
        keyId,
        signal: controller.signal,
        release() {
          if (released) return;
          released = true;
          if (!controller.signal.aborted) controller.abort('released' satisfies StreamEndReason);
          open.delete(lease);
          const left = (perKey.get(keyId) ?? 1) - 1;
          if (left <= 0) perKey.delete(keyId);
          else perKey.set(keyId, left);
          if (open.size === 0 && timer) {
            clearInterval(timer);
            timer = null;
          }
        },
        end(reason: StreamEndReason) {
          if (!controller.signal.aborted) controller.abort(reason);
        },
      };
      open.add(lease);
      perKey.set(keyId, held + 1);
      timer ??= setInterval(() => void recheck(), recheckMs).unref();
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
