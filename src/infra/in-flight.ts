/**
 * Counts in-flight work per key on this instance; the excess is refused at once rather than
 * queued. `tryAcquire` returns an idempotent release, or null when the key is at its limit.
 */
export function createInFlightLimiter(max: number) {
  const inFlight = new Map<string, number>();
  return {
    max,
    tryAcquire(key: string): (() => void) | null {
      const current = inFlight.get(key) ?? 0;
      if (current >= max) return null;
      inFlight.set(key, current + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (inFlight.get(key) ?? 1) - 1;
        if (left <= 0) inFlight.delete(key);
        else inFlight.set(key, left);
      };
    },
  };
}

export type InFlightLimiter = ReturnType<typeof createInFlightLimiter>;
