/**
 * The expiry sweep's cost per million expired rows, for docs/scaling.md: in a scratch database of
 * its own (dropped at the end), migrated and filled with the bench's generator at the quick scale
 * (500 users, 55,000 rows that stay), it publishes `--rows` rows (1,000,000 by default) spread over
 * every user in turn, as a publish does (one insert per batch, the counter trigger), already
 * expired, then starts the service's bundle with the sweep back to back (`NOTIFICATION_SWEEP_INTERVAL_MS`
 * 100) and times it until every expired row is gone: rows/s, the service's and PostgreSQL's CPU
 * (from /proc), the WAL written and the blocks read, and checks the counters against a recount.
 *
 *   DATABASE_URL=postgres://…/postgres REDIS_URL=redis://… tsx bench/sweep-cost.ts [--rows 1000000] [--batch 500]
 *
 * Run `npm run build` first (the bundle the service runs), and under the bench lock on a shared machine.
 */
import { loadavg } from 'node:os';
import pg from 'pg';
import { QUICK } from './generate-data.js';
import { withScratchDatabase } from './lib/scratch.js';
import { cpuSecondsOf, startScratchService } from './lib/servers.js';

const argv = process.argv.slice(2);
const option = (name: string, fallback: number) => (argv.includes(`--${name}`) ? Number(argv[argv.indexOf(`--${name}`) + 1]) : fallback);
const ROWS = option('rows', 1_000_000);
const BATCH = option('batch', 500);
const INSERT_BATCH = 100_000;

const seconds = (since: number) => (performance.now() - since) / 1000;
const log = (line: string) => console.error(`[sweep-cost ${new Date().toISOString().slice(11, 19)}] ${line}`);

/** The expiring rows, every user in turn (the oldest expiry first), in batches of one statement each. */
async function publishExpired(client: pg.Client): Promise<number> {
  const started = performance.now();
  for (let from = 0; from < ROWS; from += INSERT_BATCH) {
    await client.query(
      `insert into notifications (id, user_id, notification_type, is_seen, title, body, created_at, expires_at)
       select gen_random_uuid(), u.ids[1 + i % cardinality(u.ids)], t.types[1 + (i / 7) % cardinality(t.types)], i % 3 = 0,
              'Expiring ' || i, 'A notification that expires, number ' || i, now() - interval '2 days' + i * interval '1 ms',
              now() - interval '1 day' + i * interval '1 ms'
         from generate_series($1::int, $2::int) i,
              (select array_agg(id order by id) as ids from users) u,
              (select array_agg(notification_type order by notification_type) as types from notification_types) t`,
      [from, Math.min(from + INSERT_BATCH, ROWS) - 1],
    );
  }
  return seconds(started);
}

async function main() {
  await withScratchDatabase('sweep_cost', async (url) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const inserted = await publishExpired(client);
      log(`${ROWS} expired rows published in ${inserted.toFixed(1)} s`);
      await client.query('vacuum analyze notifications');
      await client.query('checkpoint');
      await sweep(client, url, inserted);
    } finally {
      await client.end();
    }
  });
}

async function sweep(client: pg.Client, url: string, insertedSeconds: number) {
  const io = async () =>
    (
      await client.query<{ wal: string; read: string; hit: string }>(
        `select pg_current_wal_lsn()::text as wal, blks_read::text as read, blks_hit::text as hit from pg_stat_database where datname = current_database()`,
      )
    ).rows[0];
  const left = async () => Number((await client.query(`select count(*)::int as n from notifications where expires_at <= now()`)).rows[0].n);
  const backends = async () =>
    (
      await client.query<{ pid: number }>(
        `select pid from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`,
      )
    ).rows.map((r) => r.pid);
  const before = await io();
  const started = performance.now();
  // The sweep back to back: the next sweep 100 ms after one ends.
  const server = await startScratchService('sweep-cost', url, {
    NOTIFICATION_SWEEP_INTERVAL_MS: '100',
    NOTIFICATION_SWEEP_BATCH: String(BATCH),
  });
  const service0 = cpuSecondsOf(server.pid);
  const pgCpu = new Map<number, [number, number]>();
  let remaining = ROWS;
  try {
    while (remaining > 0) {
      for (const pid of await backends()) {
        const now = cpuSecondsOf(pid);
        const seen = pgCpu.get(pid);
        if (Number.isFinite(now)) pgCpu.set(pid, [seen?.[0] ?? now, now]);
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
      remaining = await left();
    }
  } finally {
    const serviceSeconds = cpuSecondsOf(server.pid) - service0;
    await server.stop();
    const took = seconds(started);
    const after = await io();
    const wal = Number((await client.query(`select pg_wal_lsn_diff($1, $2)::bigint as b`, [after.wal, before.wal])).rows[0].b);
    const drift = (
      await client.query(
        `select count(*)::int as n from notification_counters c
          left join (select user_id, notification_type, count(*) filter (where not is_seen) as unread, count(*) filter (where is_seen) as read
                       from notification_states() where archived_at is null group by user_id, notification_type) r using (user_id, notification_type)
         where c.unread_count <> coalesce(r.unread, 0) or c.read_count <> coalesce(r.read, 0)`,
      )
    ).rows[0].n;
    const pgSeconds = [...pgCpu.values()].reduce((a, [first, last]) => a + last - first, 0);
    const perMillion = (x: number) => ((x / ROWS) * 1_000_000).toFixed(0);
    console.log(
      [
        `| rows | users | batch | publish s | sweep s (service start included) | rows/s | service CPU s | PostgreSQL CPU s (lower bound) | WAL MiB | blocks read | counters off |`,
        `|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|`,
        `| ${ROWS} | ${QUICK.users} | ${BATCH} | ${insertedSeconds.toFixed(0)} | ${took.toFixed(0)} | ${(ROWS / took).toFixed(0)} | ${serviceSeconds.toFixed(1)} | ${pgSeconds.toFixed(1)} | ${(wal / 2 ** 20).toFixed(0)} | ${Number(after.read) - Number(before.read)} | ${drift} |`,
        ``,
        `per million expired rows: ${perMillion(took)} s of sweep, ${perMillion(serviceSeconds)} s of service CPU, ${perMillion(pgSeconds)} s of PostgreSQL CPU, ${perMillion(wal / 2 ** 20)} MiB of WAL; load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join('/')} at the end`,
      ].join('\n'),
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
