/**
 * What one server sends and receives per request on one scenario: `tsx bench/wire-count.ts
 * --scenario counts --server service [--database NAME] [--seconds 5] [--quick] [--service-root DIR]`.
 * Starts the server alone (as profile.ts does), warms it up with wrk, then over a second wrk run
 * with strace attached (`-f -yy`: every thread, each descriptor's peer) counts per answered
 * request: the system calls, those on sockets and their bytes by peer (PostgreSQL, Redis, the HTTP clients), the
 * PostgreSQL transactions of its database (`pg_stat_database`: one per statement sent outside a
 * transaction) and the Redis commands by name (`INFO commandstats`). The same figures over an idle
 * window of as long are printed beside them: what background work (sweeps, pollers) adds.
 * strace slows the server several times, so its req/s mean nothing; the counts per request do.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { DEFAULT_SEED, FULL, QUICK } from './generate-data.js';
import { sleep, withDatabase } from './lib/common.js';
import { findWrk, runLoad } from './lib/load.js';
import { BENCH_SERVER_ENV, buildService, ROOT, SERVERS, startServer } from './lib/servers.js';
import { buildScenarios, loadFixture, type ServerKind } from './scenarios.js';

const argv = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const quick = argv.includes('--quick');
const serverKind = option('server', 'service') as ServerKind;
const scenarioId = option('scenario', 'counts');
const seconds = Number(option('seconds', '5'));
const serviceRoot = option('service-root', ROOT);
const database = option('database', quick ? 'bench_quick' : 'bench');
const url = withDatabase(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', database);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const port = 4321;

findWrk();
const fixture = await loadFixture(url, quick ? QUICK : FULL, DEFAULT_SEED, 32);
const target = buildScenarios(fixture, 32)
  .find((s) => s.id === scenarioId)
  ?.targets.find((t) => t.server === serverKind);
if (!target) throw new Error(`no target ${serverKind} in scenario ${scenarioId}`);
if (serverKind === 'service') buildService(serviceRoot);
const server = await startServer({
  name: `wire-${serverKind}`,
  script: SERVERS[serverKind].script,
  port,
  cwd: serverKind === 'service' ? serviceRoot : ROOT,
  env: {
    ...SERVERS[serverKind].env,
    DATABASE_URL: url,
    REDIS_URL: redisUrl,
    ...BENCH_SERVER_ENV,
  },
});

const admin = new pg.Client({ connectionString: url });
await admin.connect();
const redis = new Redis(redisUrl);
/** Transactions committed in the database so far, and the Redis commands run so far by name. */
async function snapshot() {
  await sleep(11_000); // an idle backend reports its last statistics within 10 s
  const { rows } = await admin.query(`select xact_commit + xact_rollback as xacts from pg_stat_database where datname = $1`, [database]);
  const commands = new Map<string, number>();
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const m = /^cmdstat_(\w+):calls=(\d+)/.exec(line);
    if (m) commands.set(m[1], Number(m[2]));
  }
  return { xacts: Number(rows[0].xacts), commands };
}

type Tally = Map<string, { calls: number; bytes: number }>;
/** strace's lines as calls and bytes by `syscall peer` (peer: pg, redis, http or other). */
function tally(file: string): Tally {
  const counts: Tally = new Map();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^(?:\[pid\s+\d+\]\s+|\d+\s+)?(\w+)\((?:(\d+)<(TCP(?:v6)?:\[[^\]]*\]|[^>]*)>)?.*=\s+(-?\d+)/.exec(line);
    if (!m) continue;
    const [, call, fd, peer, result] = m;
    const kind =
      fd === undefined ? '' : /:5432\]/.test(peer) ? 'pg' : /:6379\]/.test(peer) ? 'redis' : peer.includes(`:${port}->`) ? 'http' : 'other';
    const key = `${call} ${kind}`.trim();
    const entry = counts.get(key) ?? { calls: 0, bytes: 0 };
    entry.calls += 1;
    entry.bytes += Math.max(0, Number(result));
    counts.set(key, entry);
  }
  return counts;
}

async function traced(load: () => Promise<number>) {
  const file = `/tmp/wire-count-${process.pid}.strace`;
  const strace = spawn('strace', ['-f', '-yy', '-e', 'signal=none', '-o', file, '-p', String(server.pid)], { stdio: 'ignore' });
  await sleep(1000);
  const before = await snapshot();
  const requests = await load();
  const after = await snapshot();
  strace.kill('SIGINT');
  await new Promise((resolve) => strace.once('close', resolve));
  const calls = tally(file);
  rmSync(file, { force: true });
  const commands = [...after.commands].map(([name, n]) => [name, n - (before.commands.get(name) ?? 0)] as const).filter(([, n]) => n > 0);
  return { requests, xacts: after.xacts - before.xacts, commands, calls };
}

try {
  await runLoad({ url: server.url, pid: server.pid, connections: 32, seconds: 3, perConnection: target.requests });
  const loaded = await traced(
    async () => (await runLoad({ url: server.url, pid: server.pid, connections: 32, seconds, perConnection: target.requests })).requests,
  );
  const idle = await traced(async () => (await sleep(seconds * 1000), 0));
  const n = loaded.requests;
  console.log(`${scenarioId} on ${serverKind}: ${n} requests answered under strace in ${seconds} s (idle window of ${seconds} s beside)`);
  console.log(`PostgreSQL transactions per request: ${(loaded.xacts / n).toFixed(3)} (idle window: ${idle.xacts} in all)`);
  for (const [name, count] of loaded.commands)
    console.log(`Redis ${name} per request: ${(count / n).toFixed(3)} (idle window: ${idle.commands.find(([c]) => c === name)?.[1] ?? 0})`);
  for (const [key, { calls, bytes }] of [...loaded.calls].sort())
    console.log(
      `${key.padEnd(16)} ${(calls / n).toFixed(3).padStart(7)} calls/req ${(bytes / n).toFixed(0).padStart(6)} bytes/req (idle: ${idle.calls.get(key)?.calls ?? 0} calls)`,
    );
} finally {
  await admin.end();
  redis.disconnect();
  await server.stop();
}
