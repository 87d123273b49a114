/**
 * The capacity model's figures (docs/scaling.md): the gateway's read mix with its write share, in
 * four configurations in one run, and the CPU every component spends per request, from /proc.
 *
 *   npx tsx bench/capacity.ts [--seconds 20] [--requests 6000] [--rounds 2]
 *
 * Self-contained, on engines of its own (test/support/local-engines.ts): a PostgreSQL 15 primary
 * filled at the quick scale by the bench's generator, a streaming replica of it, PgBouncer in
 * transaction mode in front of the primary and a redis-server, each on a free port. Configurations,
 * each loaded by 32 wrk connections in all:
 *   direct (1): one service instance (the bundle, `npm start`'s flags) straight to the primary,
 *     named prepared statements on, as a single instance runs by default;
 *   direct (2): two such instances, loaded together by two wrk processes, half of the connections each;
 *   pooled (2): the two through PgBouncer (DATABASE_PREPARED_STATEMENTS=false);
 *   pooled + replica: the same with DATABASE_REPLICA_URL (feed pages and counts on the replica).
 * The mix, per connection: feed first page, counts and a mark by id (10 ids, read then unread) in
 * 2 : 2 : 1, the proportions of the load docs/scaling.md assumes. Each round loads each
 * configuration in turn (the order reversed every other round) for `--seconds` after a warm-up, in
 * slices until `--requests` are answered; its instances run only while it is loaded.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import pg from 'pg';
import { openDatabase } from '../src/infra/database/orm.js';
import { freePort, startPgbouncer, startReplicaPair, waitForPort } from '../test/support/local-engines.js';
import { DEFAULT_SEED, ensureData, QUICK } from './generate-data.js';
import { sleep } from './lib/common.js';
import { runLoad, type HttpRequest, type RunResult } from './lib/load.js';
import { buildService, cpuSecondsOf, ROOT, startScratchService, type Server } from './lib/servers.js';
import { buildScenarios, loadFixture } from './scenarios.js';

const CONNECTIONS = 32;
const WARMUP_SECONDS = 3;
const argv = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const seconds = option('seconds', 20);
const minRequests = option('requests', 6000);
const rounds = option('rounds', 2);
const TOKEN = `pt_capacity_${process.pid}_${Date.now()}`;

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** The fields of /proc/<pid>/stat after the command name (field 3 is index 0). */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * A PostgreSQL cluster's CPU seconds: the postmaster's own and its reaped children's (cutime, so a
 * backend that ended in the window still counts) plus every live child's; `replication`, the part
 * of the live walsender, walreceiver and startup (WAL replay) processes.
 */
function clusterCpu(postmaster: number): { total: number; replication: number } {
  const own = statFields(postmaster);
  let total = (Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])) / CLOCK_TICKS;
  let replication = 0;
  const children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  for (const child of children.map(Number)) {
    const spent = cpuSecondsOf(child);
    if (Number.isNaN(spent)) continue; // ended since pgrep: its time is in the postmaster's cutime now
    total += spent;
    if (/walsender|walreceiver|startup/.test(readFileSync(`/proc/${child}/cmdline`, { encoding: 'utf8', flag: 'r' }))) replication += spent;
  }
  return { total, replication };
}

/** The machine's busy CPU seconds (every process, the load generator and other work included), from /proc/stat. */
function machineBusySeconds(): number {
  const [, ...jiffies] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = jiffies;
  return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS;
}

async function postmasterOf(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
    return Number(statFields(rows[0].pid)[1]); // ppid
  } finally {
    await client.end();
  }
}

/** A redis-server of our own (no persistence) on a free port, so its CPU is this run's alone. */
async function startRedis(): Promise<{ url: string; pid: number; stop(): void }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  await waitForPort(port);
  return { url: `redis://127.0.0.1:${port}`, pid: child.pid!, stop: () => child.kill('SIGTERM') };
}

/** Waits until the replica has replayed everything the primary has written so far. */
async function replicaCaughtUp(primaryUrl: string, replicaUrl: string): Promise<void> {
  const [primary, replica] = [new pg.Client({ connectionString: primaryUrl }), new pg.Client({ connectionString: replicaUrl })];
  await Promise.all([primary.connect(), replica.connect()]);
  try {
    const { rows } = await primary.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
    for (;;) {
      const check = await replica.query<{ done: boolean }>('select pg_last_wal_replay_lsn() >= $1::pg_lsn as done', [rows[0].lsn]);
      if (check.rows[0].done) return;
      await sleep(200);
    }
  } finally {
    await Promise.all([primary.end(), replica.end()]);
  }
}

interface Engines {
  primaryUrl: string;
  replicaUrl: string;
  bouncerUrl: string;
  redisUrl: string;
  /** Each component's CPU seconds so far. */
  cpu(): Record<string, number>;
  stop(): Promise<void>;
}

/** Primary (migrated and filled at the quick scale), replica caught up, PgBouncer, Redis. */
async function startEngines(): Promise<Engines> {
  // Room for the quick scale's hot set, as production would give it; the test clusters' 16 MB would not hold it.
  const pair = await startReplicaPair('capacity', ['shared_buffers = 128MB']);
  const redis = await startRedis();
  const bouncer = await startPgbouncer(pair.primaryUrl);
  await (await openDatabase({ kind: 'postgres', url: pair.primaryUrl, poolMax: 1 })).close();
  await ensureData(pair.primaryUrl, QUICK, DEFAULT_SEED);
  await replicaCaughtUp(pair.primaryUrl, pair.replicaUrl);
  const [primaryPid, replicaPid] = [await postmasterOf(pair.primaryUrl), await postmasterOf(pair.replicaUrl)];
  return {
    primaryUrl: pair.primaryUrl,
    replicaUrl: pair.replicaUrl,
    bouncerUrl: bouncer.url,
    redisUrl: redis.url,
    cpu: () => {
      const [primary, replica] = [clusterCpu(primaryPid), clusterCpu(replicaPid)];
      return {
        primary: primary.total,
        primaryReplication: primary.replication,
        replica: replica.total,
        replicaReplication: replica.replication,
        pgbouncer: cpuSecondsOf(bouncer.pid),
        redis: cpuSecondsOf(redis.pid),
        machine: machineBusySeconds(),
      };
    },
    stop: async () => {
      await bouncer.stop();
      redis.stop();
      pair.stop();
    },
  };
}

/** Connection c's list: feed first pages, counts and marks by id in 2 : 2 : 1 (each user's mark read, then unread, in order). */
function mixedRequests(fixture: Awaited<ReturnType<typeof loadFixture>>): (connection: number) => HttpRequest[] {
  const scenarios = buildScenarios(fixture, CONNECTIONS);
  const of = (id: string) => scenarios.find((s) => s.id === id)!.targets.find((t) => t.server === 'service')!.requests;
  const [feed, counts, mark] = [of('feed'), of('counts'), of('mark')];
  return (c) => {
    const [f, n, m] = [feed(c), counts(c), mark(c)];
    const list: HttpRequest[] = [];
    for (let i = 0; i < f.length; i++) {
      list.push(f[i], n[i % n.length]);
      if (i % 2 === 1) list.push(m[(i >> 1) % m.length]);
    }
    return list;
  };
}

interface Configuration {
  name: string;
  start(): Promise<Server[]>;
  /** The components it uses, besides its instances. */
  components: string[];
}

interface Slice {
  requests: number;
  rps: number;
  p99: number;
  errors: number;
  wall: number;
  cpu: Record<string, number>;
  replicaReads: number;
  primaryReads: number;
}

/** Routed reads by where they went, summed over instances (`/metrics`, platform token). */
async function routedReads(instances: Server[]): Promise<{ replica: number; primary: number }> {
  const sum = { replica: 0, primary: 0 };
  for (const instance of instances) {
    const text = await (await fetch(`${instance.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    for (const line of text.split('\n')) {
      const match = /^crm_db_replica_routed_reads_total\{[^}]*served_by="(replica|primary)"[^}]*\} (\S+)/.exec(line);
      if (match) sum[match[1] as 'replica' | 'primary'] += Number(match[2]);
    }
  }
  return sum;
}

/** One window of load on a configuration: its instances loaded together, connections split between them. */
async function loadSlice(instances: Server[], engines: Engines, mix: (c: number) => HttpRequest[], length: number): Promise<Slice> {
  const share = CONNECTIONS / instances.length;
  const serviceCpu = () => instances.reduce((sum, s) => sum + cpuSecondsOf(s.pid), 0);
  const [reads0, cpu0, service0, start] = [await routedReads(instances), engines.cpu(), serviceCpu(), performance.now()];
  const results: RunResult[] = await Promise.all(
    instances.map((instance, k) =>
      runLoad({ url: instance.url, pid: instance.pid, connections: share, seconds: length, perConnection: (c) => mix(c + k * share) }),
    ),
  );
  const [cpu1, service1, wall] = [engines.cpu(), serviceCpu(), (performance.now() - start) / 1000];
  const reads1 = await routedReads(instances);
  const cpu: Record<string, number> = { service: service1 - service0 };
  for (const key of Object.keys(cpu1)) cpu[key] = cpu1[key] - cpu0[key];
  return {
    requests: results.reduce((sum, r) => sum + r.requests, 0),
    rps: results.reduce((sum, r) => sum + r.rps, 0),
    p99: Math.max(...results.map((r) => r.p99)),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    wall,
    cpu,
    replicaReads: reads1.replica - reads0.replica,
    primaryReads: reads1.primary - reads0.primary,
  };
}

/** The configuration's instances started, a warm-up, then slices of `seconds` until `minRequests` are answered, summed into one. */
async function measure(config: Configuration, engines: Engines, mix: (c: number) => HttpRequest[]): Promise<Slice & { instances: number }> {
  const instances = await config.start();
  const slices: Slice[] = [];
  try {
    await loadSlice(instances, engines, mix, WARMUP_SECONDS);
    do slices.push(await loadSlice(instances, engines, mix, seconds));
    while (slices.reduce((sum, s) => sum + s.requests, 0) < minRequests);
  } finally {
    await Promise.all(instances.map((s) => s.stop()));
  }
  const total = (pick: (s: Slice) => number) => slices.reduce((sum, s) => sum + pick(s), 0);
  const cpu: Record<string, number> = {};
  for (const key of Object.keys(slices[0].cpu)) cpu[key] = total((s) => s.cpu[key]);
  return {
    instances: instances.length,
    requests: total((s) => s.requests),
    rps: total((s) => s.rps * s.wall) / total((s) => s.wall),
    p99: Math.max(...slices.map((s) => s.p99)),
    errors: total((s) => s.errors),
    wall: total((s) => s.wall),
    cpu,
    replicaReads: total((s) => s.replicaReads),
    primaryReads: total((s) => s.primaryReads),
  };
}

const COLUMNS = ['service', 'primary', 'replica', 'pgbouncer', 'redis'];

/** One row of the table: CPU ms per request of each component the configuration uses ("–" for the others). */
function tableRow(config: Configuration, round: number, s: Slice & { instances: number }): string {
  const ms = (seconds: number) => ((seconds / s.requests) * 1000).toFixed(3);
  const used = (c: string) => c === 'service' || config.components.includes(c);
  const cell = (c: string) => {
    if (!used(c)) return '–';
    const replication = c === 'primary' ? s.cpu.primaryReplication : c === 'replica' ? s.cpu.replicaReplication : undefined;
    return replication === undefined ? ms(s.cpu[c]) : `${ms(s.cpu[c])} (${ms(replication)})`;
  };
  const all = COLUMNS.filter(used).reduce((sum, c) => sum + s.cpu[c], 0);
  const routed = s.replicaReads + s.primaryReads;
  return [
    `${config.name} (${s.instances})`,
    round,
    s.requests,
    Math.round(s.rps),
    s.p99.toFixed(1),
    s.errors,
    ...COLUMNS.map(cell),
    ms(all),
    (s.cpu.machine / s.wall).toFixed(2),
    routed ? `${((s.replicaReads / routed) * 100).toFixed(1)} %` : '–',
  ].join(' | ');
}

const HEADER = [
  '| configuration (instances) | round | requests | req/s | p99 ms | errors | service | primary (walsender) | replica (startup + walreceiver) | pgbouncer | redis | all components | machine cores busy | routed reads on the replica |',
  '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
];

/**
 * The configurations, each started only for its own load (an idle instance polls the replica and
 * takes CPU from the one measured), in steps that each change one thing: one instance straight to
 * the primary; two; two through PgBouncer (unnamed statements); two through PgBouncer with the replica.
 */
function configurations(engines: Engines): Configuration[] {
  const common = { REDIS_URL: engines.redisUrl, INTERNAL_API_TOKEN: TOKEN };
  const two = (name: string, url: string, env: Record<string, string>) => () =>
    Promise.all([1, 2].map((k) => startScratchService(`capacity-${name}-${k}`, url, { ...common, ...env })));
  const pooled = (name: string, env: Record<string, string>) => two(name, engines.bouncerUrl, env);
  const unnamed = { DATABASE_PREPARED_STATEMENTS: 'false' };
  return [
    {
      name: 'direct',
      start: async () => [await startScratchService('capacity-direct', engines.primaryUrl, common)],
      components: ['primary', 'redis'],
    },
    { name: 'direct', start: two('direct', engines.primaryUrl, {}), components: ['primary', 'redis'] },
    { name: 'pooled', start: pooled('pooled', unnamed), components: ['primary', 'pgbouncer', 'redis'] },
    {
      name: 'pooled + replica',
      start: pooled('replica', { ...unnamed, DATABASE_REPLICA_URL: engines.replicaUrl }),
      components: ['primary', 'replica', 'pgbouncer', 'redis'],
    },
  ];
}

async function main(): Promise<void> {
  const load0 = loadavg();
  buildService(ROOT);
  const engines = await startEngines();
  try {
    const mix = mixedRequests(await loadFixture(engines.primaryUrl, QUICK, DEFAULT_SEED, CONNECTIONS));
    const configs = configurations(engines);
    const rows: string[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const config of round % 2 === 1 ? configs : [...configs].reverse()) {
        rows.push(`| ${tableRow(config, round, await measure(config, engines, mix))} |`);
        console.error(rows.at(-1));
      }
    }
    const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' / ');
    console.log(
      [
        `load average ${load(load0)} at the start, ${load(loadavg())} at the end; ${CONNECTIONS} wrk connections in all; CPU in ms per request`,
        '',
        ...HEADER,
        ...rows,
      ].join('\n'),
    );
  } finally {
    await engines.stop();
  }
}

await main();
