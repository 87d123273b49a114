/**
 * The targets the report checks a run against, as data: `lib/report.ts` computes each metric from
 * the run and prints one line per target (per scenario where it names several), met or not. Every
 * line of one report is measured in the same run.
 */
import type { ServerKind } from './scenarios.js';

/**
 * What a target measures. Ratios of req/s must reach the threshold (at least); the others must stay
 * within it (at most).
 */
export type Metric =
  /** The service's req/s over another server's in the same scenario (server CPU per request beside it). */
  | { kind: 'rps-ratio'; against: Exclude<ServerKind, 'service'> }
  /** The service's req/s in one scenario over its req/s in another, for each pair [scenario, base]. */
  | { kind: 'rps-ratio-between'; pairs: [string, string][] }
  /** The service's p99 latency over the same-SQL floor's in the same scenario. */
  | { kind: 'p99-ratio' }
  /** The service's p99 latency in milliseconds, with the same-SQL floor's beside it. */
  | { kind: 'p99-ms' }
  /** The share of the service's badge counts equal to count(*) over the rows (`lib/checks.ts`). */
  | { kind: 'counts-exact' }
  /** Failed requests over the whole run, every server. */
  | { kind: 'errors' }
  /** Embedded start-up: ms the service takes beyond a bare PGlite, on a fresh data dir and on reopening it (a line each). */
  | { kind: 'startup-extra-ms' }
  /** The service's peak RSS in MiB over every load scenario. */
  | { kind: 'service-peak-rss-mib' }
  /** The service's RSS in MiB with the `watch` scenario's streams open (`streams.ts`). */
  | { kind: 'streams-rss-mib' }
  /** Publish sent → event received, p99 in ms, with the `watch` scenario's streams open; any event missed fails it. */
  | { kind: 'stream-event-p99-ms' };

export interface Target {
  /** How the target reads in the table; with several scenarios, each line adds `: <scenario id>`. */
  name: string;
  /** The scenarios a per-scenario metric is taken in (those not in the run are left out); `every`: each one the run has. */
  scenarios?: string[] | 'every';
  metric: Metric;
  threshold: number;
  /** Where the number comes from. */
  source: string;
}

export const TARGETS: Target[] = [
  {
    name: 'getNotificationCounts ≥ 1.3× naive floor',
    scenarios: ['counts', 'counts-type', 'counts-heavy'],
    metric: { kind: 'rps-ratio', against: 'naive' },
    threshold: 1.3,
    source: 'the issue: badge polling, the most frequent call, well ahead of the statements the service sent at 52ef196',
  },
  {
    name: 'listNotifications, first page ≥ 1.2× naive floor',
    scenarios: ['feed', 'feed-heavy'],
    metric: { kind: 'rps-ratio', against: 'naive' },
    threshold: 1.2,
    source: 'the issue: the feed ahead of the statements the service sent at 52ef196',
  },
  {
    name: 'every scenario ≥ 0.9× same-SQL floor',
    scenarios: 'every',
    metric: { kind: 'rps-ratio', against: 'floor' },
    threshold: 0.9,
    source: 'the issue: the framework costs at most a tenth of the throughput of the same statements sent by hand',
  },
  {
    name: '/graphql feed ≥ 1.2× PostGraphile',
    scenarios: ['graphql-feed'],
    metric: { kind: 'rps-ratio', against: 'postgraphile' },
    threshold: 1.2,
    source: 'the issue: the service’s own GraphQL feed ahead of a generic GraphQL-over-PostgreSQL server',
  },
  {
    name: '/graphql feed ≥ 2× PostGraphile',
    scenarios: ['graphql-feed'],
    metric: { kind: 'rps-ratio', against: 'postgraphile' },
    threshold: 2,
    source: 'performance round three: the framework’s cost per request cut until the GraphQL feed doubles a generic server',
  },
  {
    name: 'gateway feed ≥ 1.6× PostGraphile (typical users)',
    scenarios: ['feed'],
    metric: { kind: 'rps-ratio', against: 'postgraphile' },
    threshold: 1.6,
    source: 'the issue: the purpose-built gateway feed well ahead of a generic GraphQL-over-PostgreSQL server',
  },
  {
    name: 'heavy user ≥ 0.9× typical users',
    metric: {
      kind: 'rps-ratio-between',
      pairs: [
        ['feed-heavy', 'feed'],
        ['counts-heavy', 'counts'],
      ],
    },
    threshold: 0.9,
    source: 'the issue: a feed of 100,000 rows costs what a typical one does (no count(*) over the feed)',
  },
  {
    name: 'cached skip trace ≥ 0.85× same-SQL floor (one transaction, no unit of work)',
    scenarios: ['skiptrace'],
    metric: { kind: 'rps-ratio', against: 'floor' },
    threshold: 0.85,
    source: 'the issue: a cached trace is its one transaction (charge, ledger and audit rows), without an ORM unit of work',
  },
  {
    name: "p99 ≤ 1.25× the same-SQL floor's p99 in the same scenario",
    scenarios: 'every',
    metric: { kind: 'p99-ratio' },
    threshold: 1.25,
    source:
      'the issue: tail latency relative to the same statements sent by hand in the same scenario (absolute latency under 32 closed-loop connections follows the machine)',
  },
  {
    name: 'markAllNotificationsRead p99 ≤ 50 ms on 100,000 rows',
    scenarios: ['markAll'],
    metric: { kind: 'p99-ms' },
    threshold: 50,
    source:
      "the issue: a mark of everything costs the same for 100 and 100,000 rows; one request at a time, so its latency is the call's own",
  },
  {
    name: 'no slower than the baseline (--baseline: the tree before a change)',
    scenarios: ['feed', 'feed-heavy', 'counts', 'counts-heavy', 'mark', 'markAll'],
    metric: { kind: 'rps-ratio', against: 'baseline' },
    threshold: 1,
    source:
      "the issue: feed, counts and marks by id no slower than the main before the feed's read marks, archive and expiry, alternated on the same data",
  },
  {
    name: 'embedded start-up ≤ PGlite + 0.5 s',
    metric: { kind: 'startup-extra-ms' },
    threshold: 500,
    source: 'the issue: embedded mode starts about as fast as PGlite itself',
  },
  {
    name: 'service RSS ≤ 250 MB under load on PostgreSQL',
    metric: { kind: 'service-peak-rss-mib' },
    threshold: 250,
    source: "the issue: one instance's memory on PostgreSQL, held by the heap caps of `npm start` (README)",
  },
  {
    name: 'service RSS ≤ 350 MB with 1,000 open SSE streams',
    metric: { kind: 'streams-rss-mib' },
    threshold: 350,
    source: 'the issue: one instance holds 1,000 watchNotifications streams within its memory budget',
  },
  {
    name: 'SSE: publish → event p99 ≤ 50 ms with 1,000 open streams on one instance',
    metric: { kind: 'stream-event-p99-ms' },
    threshold: 50,
    source: 'the issue: a published notification reaches its open stream promptly',
  },
  {
    name: 'counts exact',
    metric: { kind: 'counts-exact' },
    threshold: 1,
    source: 'the API contract: badge counts are exact; the counters kept by triggers must equal count(*) after the write scenarios',
  },
  {
    name: 'errors = 0',
    metric: { kind: 'errors' },
    threshold: 0,
    source:
      "the harness itself: a figure only counts if every request was answered as expected (the service's and the baseline's errors decide the line; a comparison server's errors void its own figure)",
  },
];
