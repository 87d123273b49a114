import { Counter, Histogram, type Registry } from 'prom-client';
import { ERRORS } from '../common/errors.js';
import { labelSets, startAtZero } from '../infra/metric-series.js';
import { CALLER_GONE, REPLAYED } from '../billing/audit.js';
import { TRACE_STATUSES, type SkipTraceProvider } from './providers/provider.js';

declare module '../schema/context.js' {
  interface Services {
    skipTraceMetrics: SkipTraceMetrics;
  }
}

/** Every audit outcome, so each series exists at 0 from start-up. */
const OUTCOMES = [...TRACE_STATUSES, ...Object.keys(ERRORS), CALLER_GONE, REPLAYED];
const PROVIDER_ERROR_REASONS = ['unresolvable', 'failure'] as const;

/** Every label set is bounded, so no caller input can grow the series. */
export function createSkipTraceMetrics(registry: Registry, provider: SkipTraceProvider['name']) {
  const registers = [registry];
  return {
    /** Counted with the audit row, so refusals before the mutation count too. */
    outcomes: startAtZero(
      new Counter({
        name: 'crm_skip_trace_outcomes_total',
        help: 'Skip trace requests by audit outcome (trace status or error code).',
        labelNames: ['outcome'] as const,
        registers,
      }),
      labelSets({ outcome: OUTCOMES }),
    ),
    /** Incremented once the charge's transaction has committed. */
    creditsCharged: new Counter({
      name: 'crm_skip_trace_credits_charged_total',
      help: 'Skip trace credits charged (committed charges).',
      registers,
    }),
    creditsRefunded: new Counter({
      name: 'crm_skip_trace_credits_refunded_total',
      help: 'Skip trace credits refunded (charges of undelivered responses, reversed).',
      registers,
    }),
    cacheLookups: startAtZero(
      new Counter({
        name: 'crm_skip_trace_cache_lookups_total',
        help: 'Skip trace result cache lookups by result (hit or miss).',
        labelNames: ['result'] as const,
        registers,
      }),
      labelSets({ result: ['hit', 'miss'] }),
    ),
    providerDuration: startAtZero(
      new Histogram({
        name: 'crm_skip_trace_provider_duration_seconds',
        help: 'Duration of skip trace provider calls, successful or not.',
        labelNames: ['provider'] as const,
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers,
      }),
      [{ provider }],
    ),
    providerErrors: startAtZero(
      new Counter({
        name: 'crm_skip_trace_provider_errors_total',
        help: 'Skip trace provider calls that failed, by reason (unresolvable address or failure).',
        labelNames: ['provider', 'reason'] as const,
        registers,
      }),
      labelSets({ provider: [provider], reason: PROVIDER_ERROR_REASONS }),
    ),
  };
}

export type SkipTraceMetrics = ReturnType<typeof createSkipTraceMetrics>;
