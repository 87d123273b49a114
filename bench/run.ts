/**
 * `npm run bench [-- --quick]`: builds the data, starts the servers, runs every scenario against
 * the service, the same-SQL floor, the naive floor and PostGraphile (where the scenario has it) in
 * alternation, load from wrk (`lib/load.ts`), checks the counts (`lib/checks.ts`),
 * measures embedded start-up, prints the table with ratios and targets (`lib/report.ts`, the targets
 * in `targets.ts`), and writes it to bench/results/latest.md (`latest-quick.md` for --quick, so a
 * quick run never overwrites the full run's file).
 *
 * Needs DATABASE_URL (any database on the PostgreSQL server to use: the harness creates and uses
 * its own `bench` / `bench_quick` database there) and REDIS_URL.
 *
 * Options: --quick, --rounds N, --seconds N, --warmup N, --only id,id, --regenerate, --no-startup,
 * --database NAME (the database the harness creates and uses, instead of `bench` / `bench_quick`),
 * --service-root DIR (run the service from another work tree, e.g. a copy with a proposed change),
 * --baseline DIR (also run the service built from DIR, e.g. the tree before a change, as one more
 * server alternated with the others in every scenario: the table gains a "× baseline" column),
 * --baseline-database NAME (the baseline on a database of its own, migrated by its own tree, with
 * the same generated data: its writes then pay its own triggers, not this tree's),
 * --servers kind,kind (only these of floor, naive, postgraphile besides the service and baseline),
 * --compare-autocannon (each round also loads every server with autocannon from this process, to
 * compare the two load generators' ratios),
 * --job-rounds N (rounds of the jobs scenario, alternating whether the service or the baseline goes first),
 * --startup-only (only the embedded start-up, printed as medians: no servers, data or scenarios).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { DEFAULT_SEED, ensureData, FULL, QUICK, restoreHeavyUserReadState, type GenerationReport } from './generate-data.js';
import { checkCounts, cancelAbandonedStatements, type CountCheck } from './lib/checks.js';
import { log, median, withDatabase } from './lib/common.js';
import { findWrk, runLoad, type LoadGenerator, type RunResult } from './lib/load.js';
import { render, type Row, type StartupResult } from './lib/report.js';
import { BENCH_SERVER_ENV, buildService, memoryOf, ROOT, SERVERS, startServer, type Server } from './lib/servers.js';
import { buildScenarios, loadFixture, verifyScenario, type Scenario, type ServerKind } from './scenarios.js';
import { FULL_STREAMS, measureStreams, QUICK_STREAMS, STREAM_SCENARIO, type StreamResult } from './streams.js';
import { JOBS_SCENARIO, measureJobs, type JobsResult } from './jobs.js';

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const option = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};

const quick = flag('quick');
const scale = quick ? QUICK : FULL;
const CONNECTIONS = 32;
const rounds = Number(option('rounds') ?? (quick ? 2 : 3));
/** Rounds of the `jobs` scenario, alternating which of the service and the baseline goes first. */
const jobRounds = Number(option('job-rounds') ?? 1);
const seconds = Number(option('seconds') ?? (quick ? 0.5 : 6));
const warmup = Number(option('warmup') ?? (quick ? 0.2 : 2));
const serviceRoot = option('service-root') ?? ROOT;
const only = option('only')?.split(',');
const baselineRoot = option('baseline');
const baselineDatabase = baselineRoot ? option('baseline-database') : undefined;
/** The comparison servers this run starts (the service always runs; the baseline with --baseline). */
const peers = new Set<Exclude<ServerKind, 'service'>>([
  ...((option('servers')?.split(',').filter(Boolean) ?? ['floor', 'naive', 'postgraphile']) as Exclude<ServerKind, 'service'>[]),
  ...(baselineRoot ? (['baseline'] as const) : []),
]);
const compareAutocannon = flag('compare-autocannon');
const seed = DEFAULT_SEED;
const PLATFORM_TOKEN = 'bench-platform-token-0123456789';
async function main() {
  const baseUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!baseUrl || !redisUrl) throw new Error('Set DATABASE_URL (the PostgreSQL server to use) and REDIS_URL.');
  findWrk(); // before anything is built or started: without wrk there is no run
  // Several work trees on one PostgreSQL server each keep their own data with --database.
  const database = option('database') ?? (quick ? 'bench_quick' : 'bench');
  const url = withDatabase(baseUrl, database);
  const started = performance.now();
  const load0 = loadavg();
  const commit = serviceCommit();
  log(`${scale.name} run: ${rounds} rounds × ${seconds} s per server and scenario, ${CONNECTIONS} connections (wrk), database ${database}`);

  if (flag('startup-only')) {
    buildService(serviceRoot);
    const startup = await measureStartup(Number(option('rounds') ?? (quick ? 1 : 3)));
    for (const phase of ['fresh', 'reopened'] as const) {
      const [service, bare] = [median(startup.service[phase]), median(startup.bare[phase])];
      log(`start-up ${phase}: service ${service.toFixed(0)} ms, bare PGlite ${bare.toFixed(0)} ms, +${(service - bare).toFixed(0)} ms`);
    }
    return;
  }
  await createDatabase(baseUrl, database);
  const baselineUrl = baselineDatabase ? withDatabase(baseUrl, baselineDatabase) : url;
  if (baselineDatabase) await createDatabase(baseUrl, baselineDatabase);
  buildService(serviceRoot);
  if (baselineRoot) buildService(baselineRoot);
  const servers: Partial<Record<ServerKind, Server>> = {};
  const stopAll = () => Promise.all(Object.values(servers).map((s) => s?.stop()));
  const rows: Row[] = [];
  let generation!: GenerationReport;
  let counts: CountCheck | null;
  let startup: StartupResult | null = null;
  let streams: StreamResult | null = null;
  let baselineStreams: StreamResult | null = null;
  let jobs: JobsResult | null = null;
  let baselineJobs: JobsResult | null = null;
  try {
    const common = { DATABASE_URL: url, REDIS_URL: redisUrl, ...BENCH_SERVER_ENV };
    // The service first: its migrations create the schema the data goes into.
    servers.service = await startServer({
      ...SERVERS.service,
      cwd: serviceRoot,
      env: { ...common, INTERNAL_API_TOKEN: PLATFORM_TOKEN },
    });
    generation = await ensureData(url, scale, seed, { force: flag('regenerate') });
    log(generation.generated ? `data generated in ${generation.seconds.toFixed(1)} s` : 'data already in place (same seed and scale)');
    const fixture = await loadFixture(url, scale, seed, CONNECTIONS);
    await startPeers(servers, common, baselineUrl);
    if (baselineUrl !== url) {
      // The baseline's own database: the same data, and the same resets before the run (loadFixture makes them).
      const baselineData = await ensureData(baselineUrl, scale, seed, { force: flag('regenerate') });
      log(
        `baseline database ${baselineDatabase}: ${baselineData.generated ? `data generated in ${baselineData.seconds.toFixed(1)} s` : 'data in place'}`,
      );
      await loadFixture(baselineUrl, scale, seed, CONNECTIONS);
    }
    const urls = Object.fromEntries(Object.entries(servers).map(([k, s]) => [k, s!.url])) as Record<ServerKind, string>;

    const scenarios = buildScenarios(fixture, CONNECTIONS)
      .filter((s) => !only || only.includes(s.id))
      .map(withPeersOnly);
    for (const scenario of scenarios)
      rows.push(...(await measure(scenario, servers as Record<ServerKind, Server>, urls, [...new Set([url, baselineUrl])])));
    if (!only || only.includes(STREAM_SCENARIO)) {
      const size = quick ? QUICK_STREAMS : FULL_STREAMS;
      streams = await measureStreams(servers.service, fixture, PLATFORM_TOKEN, size);
      if (servers.baseline) baselineStreams = await measureStreams(servers.baseline, fixture, PLATFORM_TOKEN, size);
    }
    if (!only || only.includes(JOBS_SCENARIO)) {
      // Rounds alternate which tree goes first (each round's figures are logged; the table has the last).
      for (let round = 0; round < jobRounds; round++) {
        const first = round % 2 === 1 && servers.baseline;
        if (first) baselineJobs = await measureJobs(servers.baseline!, fixture);
        jobs = await measureJobs(servers.service, fixture);
        if (servers.baseline && !first) baselineJobs = await measureJobs(servers.baseline, fixture);
      }
    }
    counts = await checkCounts(url, urls.service, fixture);
    log(`counts: ${counts.summary}`);
    if (scenarios.some((s) => s.id === 'markAll')) for (const u of new Set([url, baselineUrl])) await restoreReadState(u);
  } finally {
    await stopAll();
  }
  if (!flag('no-startup')) startup = await measureStartup(quick ? 1 : 3);

  const report = render({
    rows,
    generation,
    counts,
    startup,
    streams,
    baselineStreams,
    jobs,
    baselineJobs,
    minutes: (performance.now() - started) / 60_000,
    load: [load0, loadavg()],
    database,
    commit,
    settings: {
      scale,
      seed,
      connections: CONNECTIONS,
      rounds,
      seconds,
      warmup,
      foreignServiceRoot: serviceRoot !== ROOT ? serviceRoot : undefined,
      baselineRoot,
    },
  });
  process.stdout.write(`\n${report}\n`);
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  // Only a complete full run replaces latest.md; partial or modified runs go beside it, uncommitted.
  const complete =
    !only &&
    serviceRoot === ROOT &&
    !baselineRoot &&
    peers.size === 3 &&
    ['rounds', 'seconds', 'warmup'].every((o) => option(o) === undefined) &&
    !flag('no-startup') &&
    !compareAutocannon;
  const file = join(ROOT, 'bench/results', quick ? 'latest-quick.md' : complete ? 'latest.md' : 'latest-partial.md');
  writeFileSync(file, report);
  log(`written to ${file}`);
}

/** Starts the comparison servers this run asks for: the floors, PostGraphile and, with --baseline, the service of another tree. */
async function startPeers(servers: Partial<Record<ServerKind, Server>>, common: Record<string, string>, baselineUrl: string) {
  const env: Record<Exclude<ServerKind, 'service'>, Record<string, string>> = {
    floor: common,
    naive: { ...common, ...SERVERS.naive.env },
    postgraphile: { DATABASE_URL: common.DATABASE_URL, NODE_ENV: 'production' },
    baseline: { ...common, DATABASE_URL: baselineUrl, INTERNAL_API_TOKEN: PLATFORM_TOKEN },
  };
  const started = await Promise.all(
    [...peers].map(
      async (kind: Exclude<ServerKind, 'service'>) =>
        [kind, await startServer({ ...SERVERS[kind], env: env[kind], ...(kind === 'baseline' && { cwd: baselineRoot }) })] as const,
    ),
  );
  for (const [kind, server] of started) servers[kind] = server;
}

/**
 * A scenario's targets on the servers this run started, the baseline right after the service (same
 * requests). A tree in either slot other than this one is sent its own tree's documents where the
 * scenario has them (`requestsOfTree`), so an older tree runs in the first slot too.
 */
function withPeersOnly(scenario: Scenario): Scenario {
  const ownTree = (target: Scenario['targets'][number]) =>
    target.server === 'service' && serviceRoot !== ROOT && scenario.requestsOfTree
      ? { ...target, requests: scenario.requestsOfTree(serviceRoot) }
      : target;
  const targets = scenario.targets.filter((t) => t.server === 'service' || peers.has(t.server)).map(ownTree);
  const service = targets.find((t) => t.server === 'service');
  if (baselineRoot && service)
    targets.splice(1, 0, {
      ...service,
      server: 'baseline',
      label: 'service before (baseline)',
      requests: scenario.requestsOfTree?.(baselineRoot) ?? service.requests,
      load: scenario.rewriteLoad ?? service.load,
    });
  return { ...scenario, targets };
}

async function createDatabase(baseUrl: string, database: string) {
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query(`select 1 from pg_database where datname = $1`, [database]);
    if (!rowCount) await client.query(`create database ${database}`);
  } finally {
    await client.end();
  }
}

/** Leaves the heavy user's feed as generated for whoever runs next (the markAll scenario flipped it). */
async function restoreReadState(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    log(`heavy user: ${await restoreHeavyUserReadState(client, scale, seed)} rows put back to their generated read state`);
  } finally {
    await client.end();
  }
}

/** Warms each target once, then runs them in turn (A B C, A B C, …) and keeps the medians. */
async function measure(
  scenario: Scenario,
  servers: Record<ServerKind, Server>,
  urls: Record<ServerKind, string>,
  databases: string[],
): Promise<Row[]> {
  const problem = await verifyScenario(scenario, urls);
  if (problem) throw new Error(`${scenario.id}: ${problem}`);
  const runs = new Map(scenario.targets.map((t) => [t, [] as RunResult[]]));
  const autocannonRuns = new Map(scenario.targets.map((t) => [t, [] as RunResult[]]));
  const run = async (target: Scenario['targets'][number], secs: number, generator: LoadGenerator = 'wrk') => {
    const load = target.load ?? scenario.load;
    const result = await runLoad({
      url: servers[target.server].url,
      pid: servers[target.server].pid,
      connections: load?.connections ?? CONNECTIONS,
      seconds: secs,
      perConnection: target.requests,
      generator,
      ...(load && { amount: load.requestsPerRound, timeoutSeconds: load.timeoutSeconds }),
    });
    // A request given up on still runs in PostgreSQL: the next server must not wait behind it.
    for (const database of databases) {
      const cancelled = await cancelAbandonedStatements(database);
      if (cancelled) log(`${scenario.id}: cancelled ${cancelled} statement(s) ${target.label} left running after the load stopped`);
    }
    return result;
  };
  // A scenario with its own load (markAll) runs on autocannon anyway: nothing to compare.
  const compare = compareAutocannon && !scenario.load;
  for (const target of scenario.targets) await run(target, warmup);
  for (let round = 0; round < rounds; round++) {
    // Each round starts with the next target (A B C, B C A, C A B): no server always runs first or last.
    const order = scenario.targets.map((_, i) => scenario.targets[(i + round) % scenario.targets.length]);
    for (const target of order) runs.get(target)!.push(await run(target, seconds));
    if (compare) for (const target of order) autocannonRuns.get(target)!.push(await run(target, seconds, 'autocannon'));
  }
  const rows = scenario.targets.map((target): Row => {
    const r = runs.get(target)!;
    return {
      scenario,
      label: target.label,
      server: target.server,
      runs: r,
      rps: median(r.map((x) => x.rps)),
      p50: median(r.map((x) => x.p50)),
      p99: median(r.map((x) => x.p99)),
      errors: r.reduce((a, x) => a + x.errors, 0),
      peakRssMiB: Math.max(...r.map((x) => x.peakRssMiB)),
      cpuMs: median(r.map((x) => x.cpuMsPerRequest)),
      ...(compare && { autocannon: autocannonRuns.get(target)! }),
    };
  });
  for (const row of rows) {
    const byRound = row.runs.map((x) => x.rps.toFixed(x.rps < 10 ? 2 : 0)).join(', ');
    log(
      `${scenario.id.padEnd(13)} ${row.label.padEnd(24)} ${row.rps.toFixed(row.rps < 10 ? 2 : 0).padStart(6)} req/s  p50 ${row.p50.toFixed(1)} ms  p99 ${row.p99.toFixed(1)} ms  ` +
        `cpu ${row.cpuMs.toFixed(2)} ms/req  errors ${row.errors}  (rounds: ${byRound})`,
    );
  }
  for (const row of rows) if (row.errors) log(`  ${row.label} errors by kind: ${JSON.stringify(row.runs.map((x) => x.errorKinds))}`);
  for (const row of rows)
    if (row.autocannon)
      log(`  ${row.label}: autocannon ${median(row.autocannon.map((x) => x.rps)).toFixed(0)} req/s (wrk ${row.rps.toFixed(0)})`);
  return rows;
}

/**
 * Embedded start-up: spawn → first 200 from /readyz, for the service (defaults, as `npm start`)
 * and for a bare PGlite that opens the same kind of data dir and answers `select 1`; each on a
 * fresh data dir, then reopening it. Alternated, medians of `rounds`.
 */
async function measureStartup(rounds: number): Promise<StartupResult> {
  const empty = () => ({ fresh: [], reopened: [], rss: [] });
  const result: StartupResult = { bare: empty(), service: empty(), ...(baselineRoot && { baseline: empty() }) };
  const base = join(ROOT, 'bench/.data/startup');
  mkdirSync(base, { recursive: true });
  const kinds = baselineRoot ? (['bare', 'service', 'baseline'] as const) : (['bare', 'service'] as const);
  for (let round = 0; round < rounds; round++) {
    for (const kind of kinds) {
      const dataDir = join(base, `${kind}-${round}`);
      rmSync(dataDir, { recursive: true, force: true });
      for (const phase of ['fresh', 'reopened'] as const) {
        const server = await startServer({
          name: `startup-${kind}`,
          script: kind === 'bare' ? join(ROOT, 'bench/lib/pglite-bare.mjs') : SERVERS.service.script,
          cwd: kind === 'bare' ? ROOT : kind === 'baseline' ? baselineRoot : serviceRoot,
          port: 4310,
          env: { DATA_DIR: dataDir, LOG_LEVEL: 'warn', NODE_ENV: 'production' },
          pollMs: 10,
        });
        result[kind]![phase].push(server.readyMs);
        result[kind]!.rss.push(memoryOf(server.pid).rss);
        await server.stop();
        log(`start-up ${kind} ${phase}: ${server.readyMs.toFixed(0)} ms`);
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  return result;
}

/** The commit the service runs, read when it starts (others may commit while a run goes on), and whether its tree differs from it. */
function serviceCommit(): string {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: serviceRoot }).toString().trim();
    const dirty = git('status', '--porcelain', '--', 'src', 'migrations') !== '';
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' + uncommitted changes in src/' : ''}`;
  } catch {
    return 'unknown';
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
