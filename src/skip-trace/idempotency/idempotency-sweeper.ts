import type { Logger } from 'pino';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/database/sql.js';
import { deleteExpiredKeys } from './idempotency-keys.data.js';
import { deleteExpiredItems } from './keyed-items.data.js';
import { startPeriodic, type Periodic } from '../../infra/periodic.js';

/** A backlog is worked off over several sweeps rather than in one long burst. */
const MAX_BATCHES_PER_SWEEP = 10;

export type IdempotencySweeper = Periodic;

/** The claim already ignores an expired key, so the sweep only bounds the table; instances skip each other's rows. */
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
