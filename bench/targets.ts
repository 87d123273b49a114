/**
 * The targets the report checks a run against, as data: `lib/report.ts` computes each metric from
 * the run and prints one line per target (per scenario where it names several), met or not.
 */
import type { ServerKind } from './scenarios.js';

/**
 * What a target measures. Ratios must reach the threshold (at least); the others must stay within
 * it (at most).
 */
export type Metric =
  /** The service's req/s over another server's in the same scenario (server CPU per request beside it). */
  | { kind: 'rps-ratio'; against: Exclude<ServerKind, 'service'> }
  /** The service's req/s in one scenario over its req/s in another. */
  | { kind: 'rps-ratio-between'; scenario: string; base: string }
  /** The service's p99 latency in ms (the raw floor's beside it). */
  | { kind: 'p99-ms' }
  /** The share of the service's badge counts equal to count(*) over the rows (`lib/checks.ts`). */
  | { kind: 'counts-exact' }
  /** Failed requests over the whole run, every server. */
  | { kind: 'errors' }
  /** Embedded start-up: ms the service takes beyond a bare PGlite, on a fresh data dir and on reopening it (a line each). */
  | { kind: 'startup-extra-ms' }
  /** The service's peak RSS in MiB over every scenario. */
  | { kind: 'service-peak-rss-mib' };

export interface Target {
  /** How the target reads in the table; with several scenarios, each line adds `: <scenario id>`. */
  name: string;
  /** The scenarios a per-scenario metric is taken in; those not in the run are left out. */
  scenarios?: string[];
  metric: Metric;
  threshold: number;
  /** Where the number comes from. */
  source: string;
}

const FEED = ['feed', 'feed-deep', 'feed-type', 'feed-search', 'feed-heavy'];

export const TARGETS: Target[] = [
  {
    name: 'listNotifications ≥ 0.8× raw floor',
    scenarios: FEED,
    metric: { kind: 'rps-ratio', against: 'floor' },
    threshold: 0.8,
    source: 'goal set with the benchmarks: the framework may cost the feed at most a fifth of the throughput of its bare SQL',
  },
  {
    name: 'listNotifications ≥ 1.5× PostGraphile',
    scenarios: ['feed', 'feed-heavy'],
    metric: { kind: 'rps-ratio', against: 'postgraphile' },
    threshold: 1.5,
    source: 'goal set with the benchmarks: a purpose-built feed well ahead of a generic GraphQL-over-PostgreSQL server',
  },
  {
    name: 'listNotifications p99 ≤ 25 ms',
    scenarios: FEED,
    metric: { kind: 'p99-ms' },
    threshold: 25,
    source: 'goal set with the benchmarks: feed latency for an interactive client (reachable only where the floor is that fast)',
  },
  {
    name: 'heavy user ≥ 0.8× typical users (req/s)',
    metric: { kind: 'rps-ratio-between', scenario: 'feed-heavy', base: 'feed' },
    threshold: 0.8,
    source: 'goal set with the benchmarks: a feed of 100,000 rows costs what a typical one does (no count(*) over the feed)',
  },
  {
    name: 'getNotificationCounts ≥ 0.85× raw floor',
    scenarios: ['counts', 'counts-type', 'counts-heavy'],
    metric: { kind: 'rps-ratio', against: 'floor' },
    threshold: 0.85,
    source: 'goal set with the benchmarks: badge polling, the most frequent call, close to its bare SQL',
  },
  {
    name: 'getNotificationCounts exact at any feed size',
    metric: { kind: 'counts-exact' },
    threshold: 1,
    source: 'the API contract: badge counts are exact; the counters kept by triggers must equal count(*) after the write scenarios',
  },
  {
    name: 'markAllNotificationsRead of the heavy user (its whole feed: 100,000 rows in the full run) p99 ≤ 5000 ms',
    scenarios: ['markAll'],
    metric: { kind: 'p99-ms' },
    threshold: 5000,
    source:
      'the API contract: one statement-sized transaction per call, in bounded time whatever the feed size (goal set with the scenario: well within a client timeout)',
  },
  {
    name: 'cached skip trace ≥ 0.6× raw transaction',
    scenarios: ['skiptrace'],
    metric: { kind: 'rps-ratio', against: 'floor' },
    threshold: 0.6,
    source: 'goal set with the benchmarks: a cached trace costs little beyond its transaction (charge, ledger and audit rows)',
  },
  {
    name: 'errors',
    metric: { kind: 'errors' },
    threshold: 0,
    source: 'the harness itself: a figure only counts if every request was answered as expected',
  },
  {
    name: 'embedded start-up ≤ PGlite + 0.5 s',
    metric: { kind: 'startup-extra-ms' },
    threshold: 500,
    source: 'goal set with the benchmarks: embedded mode starts about as fast as PGlite itself',
  },
  {
    name: 'service RSS ≤ 250 MB under load (PostgreSQL)',
    metric: { kind: 'service-peak-rss-mib' },
    threshold: 250,
    source: "goal set with the benchmarks: one instance's memory on PostgreSQL, held by the heap caps of `npm start` (README)",
  },
];
