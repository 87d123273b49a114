/** The markdown report of a run: header, the table of every scenario and server, the targets (`../targets.ts`) met or not. */
import { cpus, totalmem } from 'node:os';
import type { GenerationReport, Scale } from '../generate-data.js';
import type { Scenario, ServerKind } from '../scenarios.js';
import { TARGETS, type Metric, type Target } from '../targets.js';
import type { CountCheck } from './checks.js';
import { median } from './common.js';
import type { RunResult } from './load.js';
import { NODE_VERSION } from './servers.js';
import { renderStreams, type StreamResult } from '../streams.js';

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
}

export interface StartupResult {
  bare: { fresh: number[]; reopened: number[]; rss: number[] };
  service: { fresh: number[]; reopened: number[]; rss: number[] };
}

export interface ReportInput {
  rows: Row[];
  generation: GenerationReport;
  /** Null when the run ended before the counts were checked. */
  counts: CountCheck | null;
  startup: StartupResult | null;
  /** The `watch` scenario, when it ran. */
  streams?: StreamResult | null;
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
  };
}

const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–';
const ms = (n: number) => (n < 10 ? fmt(n, 1) : fmt(n, 0));
const verdict = (ok: boolean) => (ok ? '**met**' : '**not met**');

export function render(input: ReportInput): string {
  const { rows, startup, settings } = input;
  const { connections } = settings;
  const find = (id: string, server: ServerKind) => rows.find((r) => r.scenario.id === id && r.server === server);

  const lines: string[] = [];
  lines.push(`# Benchmark results (${settings.scale.name} run)`, '');
  if (settings.foreignServiceRoot) lines.push(`Service run from \`${settings.foreignServiceRoot}\`, not this work tree.`, '');
  lines.push(
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · commit ${input.commit} · Node ${NODE_VERSION} (every server; harness ${process.version}) · ${cpus().length} cores, ${fmt(totalmem() / 2 ** 30)} GiB · ` +
      `${connections} connections · ${settings.rounds} rounds of ${settings.seconds} s per server (after ${settings.warmup} s warm-up), servers alternated, medians · ` +
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
    '| scenario | server | req/s | req/s by round | p50 ms | p99 ms | errors | peak RSS MiB | CPU ms/req | × raw floor | × PostGraphile |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  );
  for (const row of rows) {
    const floor = find(row.scenario.id, 'floor');
    const peer = find(row.scenario.id, 'postgraphile');
    const isService = row.server === 'service';
    lines.push(
      `| ${row === rows.find((r) => r.scenario === row.scenario) ? row.scenario.title : ''} | ${row.label} | ${fmt(row.rps)} | ${row.runs.map((x) => fmt(x.rps)).join(' / ')} | ${ms(row.p50)} | ${ms(row.p99)} | ${row.errors} | ${fmt(row.peakRssMiB)} | ${fmt(row.cpuMs, 2)} | ` +
        `${isService && floor ? `${fmt(row.rps / floor.rps, 2)}×` : ''} | ${isService && peer ? `${fmt(row.rps / peer.rps, 2)}×` : row.server === 'floor' && peer ? `(floor ${fmt(row.rps / peer.rps, 2)}×)` : ''} |`,
    );
  }
  lines.push('');

  lines.push('| target | figure | |', '|---|---|---|');
  for (const target of TARGETS) {
    for (const { name, figure, ok } of evaluate(target, input)) lines.push(`| ${name} | ${figure} | ${verdict(ok)} |`);
  }
  const p99 = TARGETS.find((t) => t.metric.kind === 'p99-ms')?.threshold ?? Number.NaN;
  lines.push(
    '',
    `With ${connections} closed-loop connections, mean latency ≈ ${connections} / throughput (Little's law): a p99 of ${p99} ms needs well over ${fmt(connections / (p99 / 1000))} req/s, ` +
      'so the p99 targets are only reachable where the raw floor itself goes that fast.',
    '',
  );

  if (input.streams) lines.push(...renderStreams(input.streams));
  if (startup) {
    lines.push(
      `Embedded start-up (spawn → first 200 from /readyz, medians of ${startup.bare.fresh.length}): bare PGlite fresh ${fmt(median(startup.bare.fresh))} ms, reopened ${fmt(median(startup.bare.reopened))} ms, ` +
        `RSS ${fmt(Math.max(...startup.bare.rss))} MiB; service (defaults, demo seed on a fresh dir) fresh ${fmt(median(startup.service.fresh))} ms, reopened ${fmt(median(startup.service.reopened))} ms, ` +
        `RSS ${fmt(Math.max(...startup.service.rss))} MiB (embedded engine's WASM heap included; reported apart from the PostgreSQL figure).`,
      '',
    );
  }
  lines.push(
    'Servers: **service** = `dist/main.js`, the bundle `npm start` runs (Fastify + Yoga + MikroORM, PostgreSQL, Redis windows); **raw floor** = `bench/floor.ts` (`floors/same-sql.ts`) (`node:http` + `pg` + `ioredis`, the same SQL and Redis window per request); ' +
      '**PostGraphile** = `bench/postgraphile.ts` (v5, amber preset, `allNotifications` by `userId`, newest first, first 25, `totalCount`, key lookup in its context). ' +
      'Pools of 10 connections each. Every connection of the load generator speaks for its own users and keys.',
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
  const inRun = (id: string) => rows.some((r) => r.scenario.id === id);
  const line = (name: string, value: number, figure: string): Line => ({ name, figure, ok: meets(target.metric, value, target.threshold) });

  if (target.scenarios) {
    const several = target.scenarios.length > 1;
    return target.scenarios.filter(inRun).map((id) => {
      const name = several ? `${target.name}: ${id}` : target.name;
      const service = find(id, 'service');
      switch (target.metric.kind) {
        case 'rps-ratio': {
          const other = find(id, target.metric.against);
          const ratio = service && other ? service.rps / other.rps : Number.NaN;
          // Beside each req/s ratio, the same ratio in server CPU per request (other ÷ service), steadier on a shared machine.
          const cpu = service && other ? ` (CPU per request: ${fmt(other.cpuMs / service.cpuMs, 2)}×)` : '';
          return line(name, ratio, `${fmt(ratio, 2)}×${cpu}`);
        }
        case 'p99-ms': {
          const p99 = service?.p99 ?? Number.NaN;
          const floor = find(id, 'floor');
          return line(name, p99, `${ms(p99)} ms${floor ? ` (raw floor ${ms(floor.p99)} ms)` : ''}`);
        }
        default:
          throw new Error(`${target.name}: ${target.metric.kind} is not a per-scenario metric`);
      }
    });
  }

  const metric = target.metric;
  switch (metric.kind) {
    case 'rps-ratio-between': {
      const service = find(metric.scenario, 'service');
      const base = find(metric.base, 'service');
      if (!service || !base) return [];
      const ratio = service.rps / base.rps;
      return [line(target.name, ratio, `${fmt(ratio, 2)}×`)];
    }
    case 'counts-exact': {
      const share = input.counts ? input.counts.exact / input.counts.checked : Number.NaN;
      return [line(target.name, share, input.counts?.summary ?? 'not checked')];
    }
    case 'errors': {
      const errors = rows.reduce((a, r) => a + r.errors, 0);
      return [line(target.name, errors, `${errors}`)];
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
          `${fmt(service)} ms vs ${fmt(bare)} ms: +${fmt(service - bare)} ms`,
        );
      });
    }
    case 'service-peak-rss-mib': {
      const rss = Math.max(...rows.filter((r) => r.server === 'service').map((r) => r.peakRssMiB));
      return [line(target.name, rss, `${fmt(rss)} MiB peak`)];
    }
    default:
      throw new Error(`${target.name}: ${metric.kind} needs scenarios`);
  }
}

/** Ratios must reach the threshold; latencies, errors, start-up time and memory must stay within it. */
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
