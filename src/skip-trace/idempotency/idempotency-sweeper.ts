import type { Logger } from 'pino';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/database/sql.js';
import { deleteExpiredKeys } from './idempotency-keys.data.js';

/** Batches one sweep deletes at most, so a backlog is worked off over several sweeps rather than in one long burst. */
const MAX_BATCHES_PER_SWEEP = 10;

export interface IdempotencySweeper {
  /** Stops the interval and waits for a sweep under way. */
  stop(): Promise<void>;
}

/**
 * Deletes Idempotency-Keys whose 24 h are over, every `intervalMs`, `batch` rows per statement.
 * Every instance sweeps; their deletes skip each other's rows. An expired key is already ignored
 * by the claim, so the sweep only bounds the table.
 */
export function startIdempotencySweeper(db: Db, options: Config['skipTrace']['idempotencySweep'], log: Logger): IdempotencySweeper {
  let running: Promise<void> | null = null;
  const sweep = async () => {
    let deleted = 0;
    for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
      const count = await deleteExpiredKeys(db, options.batch);
      deleted += count;
      if (count < options.batch) break;
    }
    if (deleted) log.debug({ deleted }, 'swept expired idempotency keys');
  };
  const tick = () => {
    if (running) return;
    running = sweep()
      .catch((error) => log.warn({ err: error }, 'could not sweep expired idempotency keys; retrying at the next interval'))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, options.intervalMs);
  // Never what keeps the process alive.
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
