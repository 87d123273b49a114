import type { Logger } from 'pino';

/** How soon a repair that failed (Redis still away) is tried again. */
const RETRY_MS = 1000;

/**
 * Users whose log may lack changes: one could not be written (Redis away), or this instance's
 * streams may have missed messages (its subscriber was away). Once Redis takes writes again a
 * `reset` entry is appended to each one's log (`appendReset`), so a stream resuming from before it
 * is told to re-read rather than replayed a log with a hole. Kept until written, retried every second.
 */
export function createGapRepair(appendReset: (userId: string) => Promise<void>, log: Logger) {
  const users = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let closed = false;
  const schedule = () => {
    if (timer || closed || !users.size) return;
    timer = setTimeout(() => void flush(), RETRY_MS);
    timer.unref();
  };
  const flush = async () => {
    clearTimeout(timer);
    timer = undefined;
    if (running || closed) return;
    running = true;
    try {
      for (const userId of [...users]) {
        await appendReset(userId);
        users.delete(userId);
      }
    } catch (error) {
      log.debug({ err: error }, 'could not mark notification logs as incomplete yet; retrying');
    } finally {
      running = false;
      schedule();
    }
  };
  return {
    /** A change of the user's was not logged: repaired once Redis is back. */
    note(userId: string) {
      users.add(userId);
      schedule();
    },
    /** Repairs now (the event bus is back), these users too. */
    repair(userIds: Iterable<string>) {
      for (const userId of userIds) users.add(userId);
      void flush();
    },
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}
