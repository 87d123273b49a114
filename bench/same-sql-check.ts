/**
 * Checks that the same-SQL floor sends the service's statements: starts the service (its bundle,
 * `npm run build` first) and then the floor on the bench database with `log_statement = all` on
 * their own sessions, sends each a few requests of every feed scenario, and compares the
 * statements each one's requests left in PostgreSQL's log (texts with whitespace and prepared
 * statement names normalized, and their parameters), leaving out the background workers'.
 *
 *   tsx bench/same-sql-check.ts [--database bench] [--log /var/log/postgresql/postgresql-15-main.log]
 *
 * Needs DATABASE_URL (the server), REDIS_URL, data from `npm run bench`, and read access to the
 * server's log. Exits 1 when a scenario's statements differ, printing both lists.
 */
import { readFileSync, statSync } from 'node:fs';
import { withDatabase } from './lib/common.js';
import { BENCH_SERVER_ENV, SERVERS, startServer } from './lib/servers.js';
import { DEFAULT_SEED, FULL } from './generate-data.js';
import { buildScenarios, loadFixture } from './scenarios.js';

const argv = process.argv.slice(2);
const option = (name: string, fallback: string) => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : fallback);
const LOG = option('log', '/var/log/postgresql/postgresql-15-main.log');
const SCENARIOS = ['feed', 'feed-deep', 'feed-type', 'feed-search', 'feed-heavy', 'counts', 'counts-type', 'mark', 'markAll'];

/** A log excerpt as a list of "statement || its parameters", the feed's and the key lookup's only. */
function statements(text: string): string[] {
  const entries = text.split(/\n(?=\d{4}-\d\d-\d\d )/).map((e) =>
    e
      .replace(/^\S+ \S+ UTC \[\d+\] (\S+@\S+ )?/, '')
      .replace(/execute s\d+/, 'execute')
      .replace(/\s+/g, ' ')
      .trim(),
  );
  const listed: string[] = [];
  entries.forEach((entry, i) => {
    if (!/^LOG: (execute|statement)/.test(entry) || !/api_keys|notification/.test(entry) || /notification_sweep/.test(entry)) return;
    listed.push(`${entry} || ${entries[i + 1]?.startsWith('DETAIL') ? entries[i + 1] : ''}`);
  });
  return listed;
}

async function main() {
  const url = withDatabase(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', option('database', 'bench'));
  const env = {
    DATABASE_URL: url,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    ...BENCH_SERVER_ENV,
    INTERNAL_API_TOKEN: 'same-sql-check-platform-token-0123',
    // node-postgres passes it on as each session's options.
    PGOPTIONS: '-c log_statement=all',
  };
  const fixture = await loadFixture(url, FULL, DEFAULT_SEED, 32);
  const scenarios = buildScenarios(fixture, 32).filter((s) => SCENARIOS.includes(s.id));
  const logged = new Map<string, Record<string, string[]>>();
  for (const kind of ['service', 'floor'] as const) {
    const server = await startServer({ ...SERVERS[kind], env });
    for (const scenario of scenarios) {
      const before = statSync(LOG).size;
      for (const r of scenario.targets[0].requests(0).slice(0, 2)) {
        await (await fetch(server.url + r.path, { method: r.method, headers: r.headers, body: r.body })).text();
      }
      await new Promise((resolve) => setTimeout(resolve, 300)); // the log's last lines
      logged.set(scenario.id, { ...logged.get(scenario.id), [kind]: statements(readFileSync(LOG, 'utf8').slice(before)) });
    }
    await server.stop();
  }
  let differing = 0;
  for (const [id, { service, floor }] of logged) {
    const same = JSON.stringify(service) === JSON.stringify(floor);
    console.log(`${id}: ${same ? 'same' : 'DIFFERENT'} (${service.length} statements)`);
    if (!same) {
      differing++;
      console.log(`  service:\n    ${service.join('\n    ')}\n  floor:\n    ${floor.join('\n    ')}`);
    }
  }
  process.exit(differing ? 1 : 0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
