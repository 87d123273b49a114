/** The markdown report of a run: header, the table of every scenario and server, the targets (`../targets.ts`) met or not. */
import { cpus, totalmem } from 'node:os';
import type { GenerationReport, Scale } from '../generate-data.js';
import type { Scenario } from '../scenarios.js';
import { TARGETS, type Metric, type Target } from '../targets.js';
import type { CountCheck } from './checks.js';
import { median } from './common.js';
import { WRK_THREADS, type RunResult } from './load.js';
import { NODE_VERSION, type ServerKind } from './servers.js';
import { renderStreams, type StreamResult } from '../streams.js';
import { renderJobs, type JobsResult } from '../jobs.js';

/** One server in one scenario: the medians over its rounds. */
export interface Row {
  scenario: Scenario;
  label: string;
  server: ServerKind;
  runs: RunResult[];
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  peakRssMiB: number;
  cpuMs: number;
  /** With --compare-autocannon: the same rounds loaded by autocannon from the orchestrator, right after wrk's. */
  autocannon?: RunResult[];
}

interface StartupTimes {
  fresh: number[];
  reopened: number[];
  rss: number[];
}

export interface StartupResult {
  bare: StartupTimes;
  service: StartupTimes;
  /** With --baseline: the service of the tree before the change. */
  baseline?: StartupTimes;
}

export interface ReportInput {
  rows: Row[];
  generation: GenerationReport;
  /** Null when the run ended before the counts were checked. */
  counts: CountCheck | null;
  startup: StartupResult | null;
  /** The `watch` scenario, when it ran. */
  streams?: StreamResult | null;
  /** The `watch` scenario on the baseline, with --baseline. */
  baselineStreams?: StreamResult | null;
  /** The `jobs` scenario, when it ran. */
  jobs?: JobsResult | null;
  /** The `jobs` scenario on the baseline, with --baseline. */
  baselineJobs?: JobsResult | null;
  minutes: number;
  load: number[][];
  database: string;
  commit: string;
  settings: {
    scale: Scale;
    seed: number;
    connections: number;
    rounds: number;
    seconds: number;
    warmup: number;
    /** Set when the service ran from another work tree. */
    foreignServiceRoot?: string;
    /** Set with --baseline: the tree the baseline service was built from. */
    baselineRoot?: string;
  };
}

const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–';
const ms = (n: number) => (n < 10 ? fmt(n, 1) : fmt(n, 0));
/** req/s: whole numbers, but the markAll scenario's fractions (two requests of seconds each per round) keep two digits. */
const rate = (n: number) => (n < 10 ? fmt(n, 2) : fmt(n, 0));
const verdict = (ok: boolean) => (ok ? '**met**' : '**not met**');
const ratio = (a: number, b: number) => `${fmt(a / b, 2)}×`;

export function render(input: ReportInput): string {
  const { rows, startup, settings } = input;
  const { connections } = settings;
  const find = (id: string, server: ServerKind) => rows.find((r) => r.scenario.id === id && r.server === server);
  const baseline = Boolean(settings.baselineRoot);
  /** The service against the baseline: req/s ratio, then CPU per request ratio (lower is better). */
  const againstBaseline = (row: Row) => {
    const before = row.server === 'service' ? find(row.scenario.id, 'baseline') : undefined;
    return before ? ` ${ratio(row.rps, before.rps)}, ${ratio(row.cpuMs, before.cpuMs)} |` : ' |';
  };

  const lines: string[] = [];
  lines.push(`# Benchmark results (${settings.scale.name} run)`, '');
  if (settings.foreignServiceRoot) lines.push(`Service run from \`${settings.foreignServiceRoot}\`, not this work tree.`, '');
  if (settings.baselineRoot)
    lines.push(`Baseline: the service built from \`${settings.baselineRoot}\`, alternated with the others in every scenario.`, '');
  lines.push(
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · commit ${input.commit} · Node ${NODE_VERSION} (every server; harness ${process.version}) · ${cpus().length} cores, ${fmt(totalmem() / 2 ** 30)} GiB · ` +
      `load from wrk (${WRK_THREADS} threads, ${connections} connections; markAll from autocannon) · ${settings.rounds} rounds of ${settings.seconds} s per server (after ${settings.warmup} s warm-up), servers alternated, medians · ` +
      `load average ${input.load[0].map((l) => l.toFixed(1)).join('/')} at start, ${input.load[1].map((l) => l.toFixed(1)).join('/')} at end · ${fmt(input.minutes, 1)} min in all`,
    '',
  );
  const g = input.generation.rows;
  lines.push(
    `Data (database \`${input.database}\`, seed ${settings.seed}${input.generation.generated ? `, generated in ${fmt(input.generation.seconds, 1)} s` : ', reused'}): ` +
      `${fmt(g.organizations)} organizations, ${fmt(g.users)} users, ${fmt(g.notifications)} notifications (heavy user ${fmt(settings.scale.heavyUserNotifications)}), ` +
      `${fmt(g.notification_counters)} counter rows, ${fmt(g.properties)} properties, ${fmt(g.skip_trace_results)} cached traces, ${fmt(g.api_keys)} gateway keys.`,
    '',
  );

  lines.push(
    `| scenario | server | req/s | req/s by round | p50 ms | p99 ms | errors | peak RSS MiB | CPU ms/req | × same-SQL floor | × naive floor | × PostGraphile |${baseline ? ' × baseline (req/s, CPU) |' : ''}`,
    `|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|${baseline ? '--:|' : ''}`,
  );
  for (const row of rows) {
    // The service's ratios; on the same-SQL floor's row, in parentheses, the floor's own.
    const against = (server: ServerKind) => {
      const other = find(row.scenario.id, server);
      if (!other || other === row) return '';
      if (row.server === 'service') return ratio(row.rps, other.rps);
      return row.server === 'floor' ? `(${ratio(row.rps, other.rps)})` : '';
    };
    lines.push(
      `| ${row === rows.find((r) => r.scenario === row.scenario) ? row.scenario.title : ''} | ${row.label} | ${rate(row.rps)} | ${row.runs.map((x) => rate(x.rps)).join(' / ')} | ${ms(row.p50)} | ${ms(row.p99)} | ${row.errors} | ${fmt(row.peakRssMiB)} | ${fmt(row.cpuMs, 2)} | ` +
        `${row.server === 'service' ? against('floor') : ''} | ${against('naive')} | ${against('postgraphile')} |${baseline ? againstBaseline(row) : ''}`,
    );
  }
  lines.push('', 'In parentheses on the same-SQL floor’s rows: the floor’s own ratio to the naive floor and to PostGraphile.', '');
  lines.push(...renderAutocannon(rows));

  lines.push('| target | figure | |', '|---|---|---|');
  for (const target of TARGETS) {
    for (const { name, figure, ok } of evaluate(target, input)) lines.push(`| ${name} | ${figure} | ${verdict(ok)} |`);
  }
  lines.push(
    '',
    `With ${connections} closed-loop connections, mean latency ≈ ${connections} / throughput (Little's law): latency follows the throughput the machine allows, ` +
      "so the p99 targets are set against the same-SQL floor's p99 in the same scenario rather than in milliseconds.",
    '',
  );

  if (input.streams) lines.push(...renderStreams(input.streams));
  if (input.baselineStreams) lines.push('The same on the baseline:', '', ...renderStreams(input.baselineStreams));
  if (input.jobs) lines.push(...renderJobs(input.jobs));
  if (input.baselineJobs) lines.push('The same on the baseline:', '', ...renderJobs(input.baselineJobs));
  if (startup) {
    lines.push(
      `Embedded start-up (spawn → first 200 from /readyz, medians of ${startup.bare.fresh.length}): bare PGlite fresh ${fmt(median(startup.bare.fresh))} ms, reopened ${fmt(median(startup.bare.reopened))} ms, ` +
        `RSS ${fmt(Math.max(...startup.bare.rss))} MiB; service (defaults, demo seed on a fresh dir) fresh ${fmt(median(startup.service.fresh))} ms, reopened ${fmt(median(startup.service.reopened))} ms, ` +
        `RSS ${fmt(Math.max(...startup.service.rss))} MiB (embedded engine's WASM heap included; reported apart from the PostgreSQL figure).`,
      '',
    );
    if (startup.baseline)
      lines.push(
        `Baseline's embedded start-up: fresh ${fmt(median(startup.baseline.fresh))} ms, reopened ${fmt(median(startup.baseline.reopened))} ms, RSS ${fmt(Math.max(...startup.baseline.rss))} MiB.`,
        '',
      );
  }
  lines.push(
    'Servers: **service** = `dist/main.js`, the bundle `npm start` runs (Fastify + Yoga + MikroORM, PostgreSQL, Redis windows); ' +
      '**same-SQL floor** = `bench/floor.ts` serving `floors/same-sql.ts` (`node:http` + `pg` + `ioredis`, the statements the service sends now, sent the same way); ' +
      '**naive floor** = `bench/floor.ts` with `FLOOR=naive`, serving `floors/naive.ts` (the same plumbing, the statements the service sent at 52ef196, frozen: key lookup, Redis window, then the operation, one round trip after another); ' +
      '**PostGraphile** = `bench/postgraphile.ts` (v5, amber preset, `allNotifications` by `userId`, newest first, first 25, `totalCount`, key lookup in its context). ' +
      'Pools of 10 connections each. Load: wrk in its own process, each of its threads cycling through the requests of its connections (every connection speaks for its own users and keys).',
    '',
  );
  return lines.join('\n');
}

interface Line {
  name: string;
  figure: string;
  ok: boolean;
}

/** A target's lines: one per scenario of the run it names (none when the run left them out), or one. */
function evaluate(target: Target, input: ReportInput): Line[] {
  const { rows } = input;
  const find = (id: string, server: ServerKind) => rows.find((r) => r.scenario.id === id && r.server === server);
  const line = (name: string, value: number, figure: string): Line => ({ name, figure, ok: meets(target.metric, value, target.threshold) });
  const metric = target.metric;

  if (target.scenarios) {
    const inRun = [...new Set(rows.map((r) => r.scenario.id))];
    const ids = target.scenarios === 'every' ? inRun : target.scenarios.filter((id) => inRun.includes(id));
    const several = target.scenarios === 'every' || target.scenarios.length > 1;
    // A ratio against a server the run did not start (--servers, no --baseline) has no line.
    if (metric.kind === 'rps-ratio' && !rows.some((r) => r.server === metric.against)) return [];
    return ids.map((id) => {
      const name = several ? `${target.name}: ${id}` : target.name;
      const service = find(id, 'service');
      switch (metric.kind) {
        case 'rps-ratio': {
          const other = find(id, metric.against);
          const value = service && other ? service.rps / other.rps : Number.NaN;
          // Beside each req/s ratio, the same ratio in server CPU per request (other ÷ service), steadier on a shared machine.
          const cpu = service && other ? ` (CPU per request: ${ratio(other.cpuMs, service.cpuMs)})` : '';
          return line(name, value, `${fmt(value, 2)}×${cpu}`);
        }
        case 'p99-ratio': {
          const floor = find(id, 'floor');
          const value = service && floor ? service.p99 / floor.p99 : Number.NaN;
          return line(name, value, `${fmt(value, 2)}× (${ms(service?.p99 ?? Number.NaN)} ms vs ${ms(floor?.p99 ?? Number.NaN)} ms)`);
        }
        case 'p99-ms': {
          const floor = find(id, 'floor');
          const value = service?.p99 ?? Number.NaN;
          return line(
            name,
            value,
            `${ms(value)} ms (same-SQL floor ${ms(floor?.p99 ?? Number.NaN)} ms; p50 ${ms(service?.p50 ?? Number.NaN)} ms)`,
          );
        }
        default:
          throw new Error(`${target.name}: ${metric.kind} is not a per-scenario metric`);
      }
    });
  }

  const { streams } = input;
  // The streams' targets are stated for 1,000 streams; a run with fewer (--quick) says so.
  const streamsName = () =>
    streams && streams.streams !== 1000 ? `${target.name} (this run: ${fmt(streams.streams)} streams)` : target.name;
  switch (metric.kind) {
    case 'rps-ratio-between':
      return metric.pairs.flatMap(([id, baseId]) => {
        const service = find(id, 'service');
        const base = find(baseId, 'service');
        if (!service || !base) return [];
        return [line(`${target.name}: ${id} / ${baseId}`, service.rps / base.rps, ratio(service.rps, base.rps))];
      });
    case 'counts-exact': {
      const share = input.counts ? input.counts.exact / input.counts.checked : Number.NaN;
      return [line(target.name, share, input.counts?.summary ?? 'not checked')];
    }
    case 'errors': {
      // The service's (and the baseline's) requests decide; a comparison server's errors void only its own figure, named here.
      const judged = (r: Row) => r.server === 'service' || r.server === 'baseline';
      const errors = rows.filter(judged).reduce((a, r) => a + r.errors, 0);
      const others = rows.filter((r) => !judged(r) && r.errors > 0).map((r) => `${r.label} ${r.errors} in ${r.scenario.id}`);
      const figure = others.length ? `${errors}; comparison servers: ${others.join(', ')} (their figures there do not count)` : `${errors}`;
      return [line(target.name, errors, figure)];
    }
    case 'startup-extra-ms': {
      const { startup } = input;
      if (!startup) return [];
      return (['fresh', 'reopened'] as const).map((phase) => {
        const service = median(startup.service[phase]);
        const bare = median(startup.bare[phase]);
        return line(
          `${target.name} (${phase} data dir)`,
          service - bare,
          `${fmt(service)} ms vs ${fmt(bare)} ms: ${service >= bare ? '+' : '−'}${fmt(Math.abs(service - bare))} ms`,
        );
      });
    }
    case 'service-peak-rss-mib': {
      const service = rows.filter((r) => r.server === 'service');
      if (!service.length) return [];
      const rss = Math.max(...service.map((r) => r.peakRssMiB));
      return [line(target.name, rss, `${fmt(rss)} MiB peak`)];
    }
    case 'streams-rss-mib':
      if (!streams) return [];
      return [
        line(streamsName(), streams.rssWithStreamsMiB, `${fmt(streams.rssWithStreamsMiB)} MiB (${fmt(streams.rssBeforeMiB)} MiB before)`),
      ];
    case 'stream-event-p99-ms':
      if (!streams) return [];
      return [
        line(
          streamsName(),
          streams.missed ? Number.POSITIVE_INFINITY : streams.p99,
          `${ms(streams.p99)} ms (p50 ${ms(streams.p50)} ms, ${streams.missed} missed of ${streams.publishes})`,
        ),
      ];
    default:
      throw new Error(`${target.name}: ${metric.kind} needs scenarios`);
  }
}

/** Ratios of req/s and the exact share must reach the threshold; the rest must stay within it. */
function meets(metric: Metric, value: number, threshold: number): boolean {
  switch (metric.kind) {
    case 'rps-ratio':
    case 'rps-ratio-between':
    case 'counts-exact':
      return value >= threshold;
    default:
      return value <= threshold;
  }
}

/** With --compare-autocannon: each scenario's service ÷ same-SQL floor ratio under both load generators, same rounds. */
function renderAutocannon(rows: Row[]): string[] {
  const compared = rows.filter((r) => r.server === 'service' && r.autocannon?.length);
  if (!compared.length) return [];
  const lines = [
    'Load generators compared (`--compare-autocannon`): each round ran wrk, then autocannon inside the orchestrator, against each server; medians.',
    '',
    '| scenario | service ÷ same-SQL floor, wrk | same, autocannon | service req/s wrk / autocannon | same-SQL floor req/s wrk / autocannon |',
    '|---|--:|--:|--:|--:|',
  ];
  for (const service of compared) {
    const floor = rows.find((r) => r.scenario === service.scenario && r.server === 'floor');
    if (!floor?.autocannon?.length) continue;
    const ac = (row: Row) => median(row.autocannon!.map((x) => x.rps));
    lines.push(
      `| ${service.scenario.id} | ${ratio(service.rps, floor.rps)} | ${ratio(ac(service), ac(floor))} | ${fmt(service.rps)} / ${fmt(ac(service))} | ${fmt(floor.rps)} / ${fmt(ac(floor))} |`,
    );
  }
  return [...lines, ''];
}
