import { Counter, Histogram, type Registry } from 'prom-client';

declare module '../graphql/context.js' {
  interface Services {
    skipTraceMetrics: SkipTraceMetrics;
  }
}

/**
 * The skip trace domain's metrics, counted where their events happen. Every label set is bounded:
 * `outcome` is an audit outcome (a trace status, an error kind of common/errors.ts, or
 * `client_closed`), `result` is hit or miss, `provider` is records or http, `reason` one of two.
 */
export function createSkipTraceMetrics(registry: Registry) {
  const registers = [registry];
  return {
    /** Audit outcomes, counted as each request's audit row is written (refusals before the mutation included). */
    outcomes: new Counter({
      name: 'crm_skip_trace_outcomes_total',
      help: 'Skip trace requests by audit outcome (trace status or error code).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    /** Incremented once the charge's transaction has committed. */
    creditsCharged: new Counter({
      name: 'crm_skip_trace_credits_charged_total',
      help: 'Skip trace credits charged (committed charges).',
      registers,
    }),
    /** Charges reversed because their response never reached the caller. */
    creditsRefunded: new Counter({
      name: 'crm_skip_trace_credits_refunded_total',
      help: 'Skip trace credits refunded (charges of undelivered responses, reversed).',
      registers,
    }),
    cacheLookups: new Counter({
      name: 'crm_skip_trace_cache_lookups_total',
      help: 'Skip trace result cache lookups by result (hit or miss).',
      labelNames: ['result'] as const,
      registers,
    }),
    providerDuration: new Histogram({
      name: 'crm_skip_trace_provider_duration_seconds',
      help: 'Duration of skip trace provider calls, successful or not.',
      labelNames: ['provider'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    providerErrors: new Counter({
      name: 'crm_skip_trace_provider_errors_total',
      help: 'Skip trace provider calls that failed, by reason (unresolvable address or failure).',
      labelNames: ['provider', 'reason'] as const,
      registers,
    }),
  };
}

export type SkipTraceMetrics = ReturnType<typeof createSkipTraceMetrics>;
