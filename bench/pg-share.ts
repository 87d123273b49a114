/**
 * PostgreSQL's share of each scenario's request, for the capacity model in docs/scaling.md: the CPU
 * its backends spend per request beside the service's own (both from /proc, in the same window, so
 * their ratio holds on a busy machine when the absolute figures do not), and the transactions per
 * request (an autocommit statement is one).
 *
 *   DATABASE_URL=postgres://…/postgres REDIS_URL=redis://… tsx bench/pg-share.ts [--requests 3000] [--only feed,counts]
 *
 * Self-contained, so it needs no bench lock: it creates a scratch database on DATABASE_URL's server
 * (dropped at the end), migrates it, fills it with the bench's generator at the quick scale, starts
 * the service's bundle on a random port (not the bench's fixed ones), and sends each scenario's service requests
 * (bench/scenarios.ts) from 8 concurrent connections. The backends' CPU is read from /proc, so
 * PostgreSQL must run on this machine. Figures are per request, summed over every backend of the
 * scratch database (the service's pool); the clock tick is 10 ms, hence thousands of requests.
 */
import { loadavg } from 'node:os';
import pg from 'pg';
import { DEFAULT_SEED, QUICK } from './generate-data.js';
import { withScratchDatabase } from './lib/scratch.js';
import { buildService, cpuSecondsOf, ROOT, startScratchService } from './lib/servers.js';
import { buildScenarios, loadFixture } from './scenarios.js';

const CONNECTIONS = 8;
const argv = process.argv.slice(2);
const option = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const requestsPerScenario = Number(option('requests') ?? 3000);
const only = option('only')?.split(',') ?? ['feed', 'feed-deep', 'feed-search', 'counts', 'mark', 'skiptrace', 'graphql-feed'];

await withScratchDatabase('pg_share', async (url) => {
  const fixture = await loadFixture(url, QUICK, DEFAULT_SEED, CONNECTIONS);
  buildService(ROOT);
  // The service as the bench runs it (the bundle, `npm start`'s Node flags), on a port of its own.
  const server = await startScratchService('pg-share', url);
  const service = server.url;
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  const backends = async () =>
    (
      await probe.query<{ pid: number }>(
        `select pid from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`,
      )
    ).rows.map((r) => r.pid);
  // Backends report their statistics within a second of going idle.
  const commits = async () => {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const result = await probe.query(`select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()`);
    return Number(result.rows[0].n);
  };

  const rows: string[] = [];
  try {
    for (const scenario of buildScenarios(fixture, CONNECTIONS).filter((s) => only.includes(s.id))) {
      const target = scenario.targets.find((t) => t.server === 'service');
      if (!target || scenario.load) continue;
      const send = async (connection: number, count: number) => {
        const list = target.requests(connection);
        for (let i = 0; i < count; i++) {
          const request = list[i % list.length];
          const response = await fetch(service + request.path, { method: request.method, headers: request.headers, body: request.body });
          await response.arrayBuffer();
          if (response.status !== 200) throw new Error(`${scenario.id}: ${response.status}`);
        }
      };
      await Promise.all(Array.from({ length: CONNECTIONS }, (_, c) => send(c, 50))); // warm-up: the pool's connections open
      const commits0 = await commits();
      // Backends by pid: one the pool opens during the load counts from zero; one that ends during it is lost (reported).
      const backendCpu = async () => new Map((await backends()).map((pid) => [pid, cpuSecondsOf(pid)]));
      const pg0 = await backendCpu();
      const service0 = cpuSecondsOf(server.pid);
      const per = Math.ceil(requestsPerScenario / CONNECTIONS);
      await Promise.all(Array.from({ length: CONNECTIONS }, (_, c) => send(c, per)));
      const sent = per * CONNECTIONS;
      const service1 = cpuSecondsOf(server.pid);
      const pg1 = await backendCpu();
      const lost = [...pg0.keys()].filter((pid) => !pg1.has(pid)).length;
      let pgSeconds = 0;
      for (const [pid, seconds] of pg1) pgSeconds += seconds - (pg0.get(pid) ?? 0);
      // Our probe's own transactions in between: the first statistics read and the two backend lists.
      const transactions = (await commits()) - commits0 - 3;
      const perRequest = (seconds: number) => ((seconds / sent) * 1000).toFixed(3);
      rows.push(
        `| ${scenario.id} | ${sent} | ${perRequest(service1 - service0)} | ${perRequest(pgSeconds)}${lost ? ` (${lost} backends ended)` : ''} | ${(transactions / sent).toFixed(2)} |`,
      );
      console.error(rows.at(-1));
    }
  } finally {
    await probe.end();
    await server.stop();
  }
  console.log(
    [
      `load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join('/')} at the end`,
      '| scenario | requests | service CPU ms/req | PostgreSQL CPU ms/req | transactions/req |',
      '|---|--:|--:|--:|--:|',
      ...rows,
    ].join('\n'),
  );
});
