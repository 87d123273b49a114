/**
 * Profiles one server on one scenario: `tsx bench/profile.ts --scenario feed --server service
 * [--seconds 15] [--quick] [--database NAME] [--node-args FLAGS]` (servers: service, floor (the same-SQL floor), naive, postgraphile).
 * Starts the server with `--cpu-prof` (profile written to bench/.data/profiles/ when it exits),
 * runs the scenario's load against it alone (wrk), prints the figures and the top functions by
 * self time. The data set must exist (run the bench once).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SEED, FULL, QUICK } from './generate-data.js';
import { withDatabase } from './lib/common.js';
import { findWrk, runLoad } from './lib/load.js';
import { BENCH_SERVER_ENV, buildService, memoryOf, ROOT, SERVERS, startServer } from './lib/servers.js';
import { buildScenarios, loadFixture, type ServerKind } from './scenarios.js';

const argv = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const quick = argv.includes('--quick');
const scale = quick ? QUICK : FULL;
const serverKind = option('server', 'service') as ServerKind;
const scenarioId = option('scenario', 'feed');
const seconds = Number(option('seconds', '15'));
const profile = !argv.includes('--no-prof');
/** Another work tree to run the service from (e.g. a scratch copy with a proposed change applied). */
const serviceRoot = option('service-root', ROOT);
/** Extra environment for the server, `--env KEY=VALUE` (repeatable). */
const extraEnv = Object.fromEntries(argv.flatMap((a, i) => (a === '--env' ? [argv[i + 1].split(/=(.*)/s).slice(0, 2)] : [])));
/** Extra Node flags for the server, `--node-args "--trace-gc --trace-gc-nvp"` (repeatable; Node refuses some of them in NODE_OPTIONS). */
const extraNodeArgs = argv.flatMap((a, i) => (a === '--node-args' ? argv[i + 1].split(/\s+/).filter(Boolean) : []));
const probeFile = join(ROOT, 'bench/.data/memory-probe.jsonl');

/** The bench database to read (`--database`, as the harness's; else `bench` / `bench_quick`). */
const url = withDatabase(
  process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  option('database', quick ? 'bench_quick' : 'bench'),
);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const dir = join(ROOT, 'bench/.data/profiles');

if (!(serverKind in SERVERS)) throw new Error(`--server: one of ${Object.keys(SERVERS).join(', ')}`);
findWrk();
const fixture = await loadFixture(url, scale, DEFAULT_SEED, 32);
const scenario = buildScenarios(fixture, 32).find((s) => s.id === scenarioId);
const target = scenario?.targets.find((t) => t.server === serverKind);
if (!scenario || !target) throw new Error(`no target ${serverKind} in scenario ${scenarioId}`);

if (serverKind === 'service') buildService(serviceRoot);
const server = await startServer({
  name: `profile-${serverKind}`,
  script: SERVERS[serverKind].script,
  port: 4320,
  cwd: serverKind === 'service' ? serviceRoot : ROOT,
  nodeArgs: [
    ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []),
    '--expose-gc',
    '--import',
    join(ROOT, 'bench/lib/memory-probe.ts'),
    ...extraNodeArgs,
  ],
  env: {
    ...SERVERS[serverKind].env,
    ...extraEnv,
    MEMORY_PROBE_FILE: probeFile,
    DATABASE_URL: url,
    REDIS_URL: redisUrl,
    ...BENCH_SERVER_ENV,
  },
});
const probe = async (when: string) => {
  process.kill(server.pid, 'SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, 300));
  const lines = readFileSync(probeFile, 'utf8').trim().split('\n');
  console.log(`memory ${when}: ${lines[lines.length - 1]}`);
};
console.log(`pid ${server.pid} ready in ${server.readyMs.toFixed(0)} ms, RSS ${memoryOf(server.pid).rss.toFixed(0)} MiB`);
if (argv.includes('--pause')) await new Promise((resolve) => setTimeout(resolve, 3000)); // time to attach strace/perf
await probe('at ready');
const warm = await runLoad({ url: server.url, pid: server.pid, connections: 32, seconds: 3, perConnection: target.requests });
const result = await runLoad({ url: server.url, pid: server.pid, connections: 32, seconds, perConnection: target.requests });
console.log(
  `${scenarioId} on ${serverKind}: ${result.rps.toFixed(0)} req/s, CPU ${result.cpuMsPerRequest.toFixed(3)} ms/req, p50 ${result.p50} ms, p99 ${result.p99} ms, errors ${result.errors}, ${warm.requests + result.requests} requests in all, peak RSS ${result.peakRssMiB.toFixed(0)} MiB (HWM ${memoryOf(server.pid).hwm.toFixed(0)} MiB)`,
);
await probe('after load');
await server.stop();

if (profile) {
  // The main thread's profile (thread 0) of this process; tsx's loader thread writes one of its own.
  const latest = readdirSync(dir)
    .filter((f) => f.includes(`.${server.pid}.0.`))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  const { nodes, samples, timeDeltas } = JSON.parse(readFileSync(latest, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame;
    const where = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(`file://${ROOT}`, '')}:${frame.lineNumber + 1}`;
    self.set(where, (self.get(where) ?? 0) + timeDeltas[i]);
    total += timeDeltas[i];
  });
  console.log(`\n${latest}\ntop self time:`);
  for (const [where, us] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40))
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${where}`);
}
