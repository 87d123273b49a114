import type { Logger } from 'pino';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/database/sql.js';
import { deleteExpiredKeys } from './idempotency-keys.data.js';
import { deleteExpiredItems } from './keyed-items.data.js';
import { startPeriodic, type Periodic } from '../../infra/periodic.js';

/** Batches one sweep deletes at most, so a backlog is worked off over several sweeps rather than in one long burst. */
const MAX_BATCHES_PER_SWEEP = 10;

/** `stop()` ends the interval and waits for a sweep under way. */
export type IdempotencySweeper = Periodic;

/**
 * Deletes Idempotency-Keys (and keyed batches' item rows) whose 24 h are over, every `intervalMs`, `batch` rows per statement.
 * Every instance sweeps; their deletes skip each other's rows. An expired key is already ignored
 * by the claim, so the sweep only bounds the table.
 */
export function startIdempotencySweeper(db: Db, options: Config['skipTrace']['idempotencySweep'], log: Logger): IdempotencySweeper {
  const sweep = async () => {
    let deleted = 0;
    for (const expired of [deleteExpiredKeys, deleteExpiredItems])
      for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
        const count = await expired(db, options.batch);
        deleted += count;
        if (count < options.batch) break;
      }
    if (deleted) log.debug({ deleted }, 'swept expired idempotency keys');
  };
  return startPeriodic(sweep, options.intervalMs, (error) =>
    log.warn({ err: error }, 'could not sweep expired idempotency keys; retrying at the next interval'),
  );
}
