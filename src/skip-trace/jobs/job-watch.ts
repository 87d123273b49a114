import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../infra/database/sql.js';
import type { StreamLease } from '../../infra/stream-registry.js';
import { findJob, type Job } from './jobs.data.js';

/** A job's progress is read this often at most: any instance may be running its items, so the row is the one place to look. */
export const WATCH_INTERVAL_MS = 250;

const ended = (job: Job) => job.status === 'completed' || job.status === 'cancelled';
const changed = (before: Job, after: Job) =>
  before.status !== after.status || JSON.stringify(before.counts) !== JSON.stringify(after.counts);

/** Ends with the job or the stream's lease, so a watch never outlives its lease. */
export async function* watchJob(db: Db, job: Job, lease: StreamLease): AsyncGenerator<Job> {
  let last = job;
  try {
    yield last;
    while (!ended(last) && !lease.signal.aborted) {
      await sleep(WATCH_INTERVAL_MS, undefined, { signal: lease.signal }).catch(() => undefined);
      if (lease.signal.aborted) return;
      const now = await findJob(db, job.organizationId, job.id);
      if (!now) return;
      if (changed(last, now)) yield now;
      last = now;
    }
  } finally {
    lease.release();
  }
}
