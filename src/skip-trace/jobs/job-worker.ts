/**
 * A killed instance's items are claimed again once their leases run out; charge and stored result
 * commit together, so none is charged twice (docs/architecture.md, "Jobs").
 */
import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Db } from '../../infra/database/sql.js';
import { cancelAbandoned, claimItems, renewLeases, storeUncharged, type Lease } from './job-queue.data.js';
import type { ClaimedItem } from './jobs.data.js';

declare module '../../schema/context.js' {
  interface Services {
    jobWorker: JobWorker;
  }
}

export type JobItemRunner = (item: ClaimedItem, lease: Lease) => Promise<void>;

export interface JobWorkerOptions {
  db: Db;
  log: Logger;
  concurrency: number;
  /** Renewed every third of it while the item runs. */
  leaseMs: number;
  /** A job created on this instance wakes the worker at once. */
  pollMs: number;
  runItem: JobItemRunner;
  /** Jobs may have ended, their webhooks due. */
  afterSettled?: () => Promise<void>;
}

export interface JobWorker {
  wake(): void;
  /** For items settled outside the worker (a cancel). */
  settled(): void;
  /** Items still running past `graceMs` are claimed again once their leases run out. */
  stop(graceMs?: number): Promise<void>;
}

const itemId = (item: ClaimedItem) => `${item.jobId}:${item.index}`;

/** Coalesces `afterSettled`, however many items settled. */
const SETTLED_DEBOUNCE_MS = 100;

function debounced(options: JobWorkerOptions, ms: number): () => void {
  let timer: NodeJS.Timeout | undefined;
  return () => {
    if (timer || !options.afterSettled) return;
    timer = setTimeout(() => {
      timer = undefined;
      options.afterSettled?.().catch((error) => options.log.error({ err: error }, 'could not settle ended skip trace jobs'));
    }, ms);
  };
}

export function startJobWorker(options: JobWorkerOptions): JobWorker {
  const lease: Lease = { token: randomUUID(), ms: options.leaseMs };
  const running = new Map<string, { item: ClaimedItem; done: Promise<void> }>();
  const byOrganization = new Map<string, number>();
  let stopped = false;
  const { wake, idle } = wakeable();
  const settled = debounced(options, SETTLED_DEBOUNCE_MS);

  const count = (organizationId: string, delta: number) => {
    const n = (byOrganization.get(organizationId) ?? 0) + delta;
    if (n > 0) byOrganization.set(organizationId, n);
    else byOrganization.delete(organizationId);
  };

  const start = (item: ClaimedItem) => {
    count(item.organizationId, 1);
    const done = runOne(options, item, lease).finally(() => {
      running.delete(itemId(item));
      count(item.organizationId, -1);
      wake();
      settled();
    });
    running.set(itemId(item), { item, done });
  };

  const loop = async () => {
    // The first claim waits a poll (or a new job): a starting instance answers its readiness probe first.
    await idle(options.pollMs);
    while (!stopped) {
      const free = options.concurrency - running.size;
      let claimed: ClaimedItem[] = [];
      if (free > 0) {
        claimed = await claimItems(options.db, lease, free, byOrganization).catch((error) => {
          options.log.error({ err: error }, 'could not claim skip trace job items');
          return [];
        });
        for (const item of claimed) start(item);
      }
      // A full claim may leave more to take; else wait for a finished item, a new job or the poll.
      if (!stopped) await idle(free > 0 && claimed.length === free ? 0 : options.pollMs);
      // Slots freed in the same poll join one claim and one opening read (job-items.ts).
      await setImmediate();
    }
  };

  const heartbeat = startHeartbeat(options, lease, () => [...running.values()].map((entry) => entry.item));

  const looping = loop();
  return {
    wake,
    settled,
    async stop(graceMs = 5000) {
      stopped = true;
      wake();
      clearInterval(heartbeat);
      await looping;
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
      await Promise.race([Promise.allSettled([...running.values()].map((entry) => entry.done)), grace]);
      clearTimeout(timer);
    },
  };
}

function wakeable() {
  let wakeUp: (() => void) | null = null;
  // A wake while no one waits (the loop was claiming) cuts the next wait short.
  let woken = false;
  return {
    wake: () => (wakeUp ? wakeUp() : (woken = true)),
    idle: (ms: number) =>
      new Promise<void>((resolve) => {
        if (woken || ms === 0) return resolve();
        const timer = setTimeout(resolve, ms);
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      }).finally(() => {
        wakeUp = null;
        woken = false;
      }),
  };
}

/** Every third of a lease, so a lease is renewed well before it runs out. */
function startHeartbeat(options: JobWorkerOptions, lease: Lease, items: () => ClaimedItem[]): NodeJS.Timeout {
  const heartbeat = setInterval(
    () => {
      void renewLeases(options.db, lease, items())
        .then(() => cancelAbandoned(options.db))
        .then(() => options.afterSettled?.())
        .catch((error) => options.log.error({ err: error }, 'could not renew skip trace job leases'));
    },
    Math.max(50, Math.floor(options.leaseMs / 3)),
  );
  heartbeat.unref();
  return heartbeat;
}

/** An unexpected failure is stored as `internal_error` rather than retried for ever. */
async function runOne(options: JobWorkerOptions, item: ClaimedItem, lease: Lease): Promise<void> {
  try {
    await options.runItem(item, lease);
  } catch (error) {
    options.log.error({ err: error, jobId: item.jobId, index: item.index }, 'a skip trace job item failed unexpectedly');
    await storeUncharged(options.db, item, lease, {
      status: 'failed',
      id: null,
      persons: [],
      error: { code: 'internal_error', message: 'Unexpected error.' },
    }).catch((storeError) => options.log.error({ err: storeError, jobId: item.jobId }, 'could not store a job item failure'));
  }
}
