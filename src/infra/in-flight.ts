import { Counter, type Registry } from 'prom-client';
import { startAtZero } from './metric-series.js';

/** The excess is refused at once rather than queued. The release is idempotent. */
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

const REFUSALS = 'crm_concurrency_refusals_total';

/** Every kind shares one counter, labelled by `kind`. */
export function concurrencyRefusals(registry: Registry, kind: string): () => void {
  const counter =
    (registry.getSingleMetric(REFUSALS) as Counter<'kind'> | undefined) ??
    new Counter({
      name: REFUSALS,
      help: 'Requests refused by an in-flight limit (429 concurrency_limit), by kind of limit.',
      labelNames: ['kind'] as const,
      registers: [registry],
    });
  startAtZero(counter, [{ kind }]);
  return () => counter.inc({ kind });
}
