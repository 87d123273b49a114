import type { Logger } from 'pino';
import type { Config } from '../infra/config.js';
import type { Db } from '../infra/database/sql.js';
import { compactMarksBatch, sweepBatch } from './feed.data.js';
import type { NotificationEvents } from './notification-events.js';

/** Batches one sweep runs at most, so a backlog is worked off over several sweeps rather than in one long burst. */
const MAX_BATCHES_PER_SWEEP = 20;
const DAY_MS = 86_400_000;

export interface FeedSweeper {
  sweep(): Promise<void>;
  stop(): Promise<void>;
}

/** Deletes expired and past-retention rows, then compacts read marks, in bounded batches; every instance tries, only the lease holder writes. */
export function startFeedSweeper(
  deps: { db: Db; events: NotificationEvents; log: Logger },
  options: Config['notificationSweep'],
): FeedSweeper {
  const { db, events, log } = deps;
  let running: Promise<void> | null = null;
  const once = async () => {
    const cutoff = options.retentionDays > 0 ? new Date(Date.now() - options.retentionDays * DAY_MS) : null;
    for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
      const swept = await sweepBatch(db, cutoff, options.batch);
      await Promise.all(swept.map((user) => events.updated(user.userId, null)));
      const deleted = swept.reduce((sum, user) => sum + user.deleted, 0);
      if (deleted) log.debug({ deleted, users: swept.length }, 'swept expired notifications');
      if (deleted < options.batch) break;
    }
    await compactMarks();
  };
  // No row's state changes, so no stream hears of it. The sweep's deletes queued their users' pairs
  // (a trigger), and a batch that only settles queued pairs counts as work, so the queue drains.
  const compactMarks = async () => {
    for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
      const { marksDeleted, rowsFolded, pairsSettled } = await compactMarksBatch(db, options.batch);
      if (marksDeleted || rowsFolded) log.debug({ marksDeleted, rowsFolded }, 'compacted read marks');
      if (marksDeleted + rowsFolded + pairsSettled < options.batch) break;
    }
  };
  const sweep = () =>
    (running ??= once()
      .catch((error) => log.warn({ err: error }, 'could not sweep expired notifications; retrying at the next interval'))
      .finally(() => {
        running = null;
      }));
  const timer = setInterval(() => void sweep(), options.intervalMs);
  // Never what keeps the process alive.
  timer.unref();
  return {
    sweep,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
