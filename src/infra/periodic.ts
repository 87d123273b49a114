/** `stop()` waits for a run under way. */
export interface Periodic {
  stop(): Promise<void>;
}

/** A run still going when the next is due skips that turn, so runs never overlap. Never keeps the process alive. */
export function startPeriodic(task: () => Promise<void>, intervalMs: number, onError: (error: unknown) => void): Periodic {
  let running: Promise<void> | null = null;
  const tick = () => {
    if (running) return;
    running = task()
      .catch(onError)
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
