import { execSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendor, type FakeVendor } from '../support/fake-vendor.js';
import { graphql, json, pool, requireRealBackends, spawnService, type ServiceProcess } from './spawn-service.js';

const backends = requireRealBackends();
const { redisUrl } = backends;
// A database of this file's own, so killing its connections disturbs nothing else.
const faultDatabase = `faults_${randomUUID().slice(0, 8)}`;
const databaseUrl = Object.assign(new URL(backends.databaseUrl), { pathname: `/${faultDatabase}` }).toString();

async function adminQuery(sql: string) {
  const admin = new pg.Client({ connectionString: backends.databaseUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}
const REQUEST_BOUND_MS = 15_000;

let vendor: FakeVendor;
let service: ServiceProcess;
let db: pg.Client | null = null;
let org: { organizationId: string; stk: string; userId: string; gk: string };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function database(): Promise<pg.Client> {
  if (db) return db;
  for (let attempt = 0; ; attempt++) {
    const client = new pg.Client({ connectionString: databaseUrl });
    try {
      await client.connect();
      client.on('error', () => (db = null));
      db = client;
      return client;
    } catch (error) {
      if (attempt > 50) throw error;
      await sleep(200);
    }
  }
}

/** One request, bounded in time: a hang fails the test instead of stalling it. */
async function bounded(path: string, bearer: string, body: unknown) {
  const started = Date.now();
  try {
    const result = await json(`${service.url}${path}`, {
      bearer,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_BOUND_MS),
    });
    return { status: result.status, code: result.body?.error?.code as string | undefined, ms: Date.now() - started };
  } catch (error) {
    return { status: 0, code: String((error as Error).name), ms: Date.now() - started };
  }
}

/** A mix of reads, marks, publishes and traces, `count` requests with `concurrency` in flight. */
function load(count: number, concurrency = 16) {
  return pool(count, concurrency, async (i) => {
    switch (i % 4) {
      case 0:
        return bounded('/api/v1/call', org.gk, { operationId: 'listNotifications', variables: { limit: 10 } });
      case 1: {
        const page = await json(`${service.url}/api/v1/call`, {
          bearer: org.gk,
          body: JSON.stringify({ operationId: 'listNotifications', variables: { limit: 5 } }),
          signal: AbortSignal.timeout(REQUEST_BOUND_MS),
        }).catch(() => null);
        const ids = page?.body?.data?.notifications?.map((n: { id: string }) => n.id) ?? [];
        return bounded('/api/v1/call', org.gk, {
          operationId: 'markNotificationsRead',
          variables: { notificationIds: ids, isSeen: i % 8 === 1 },
        });
      }
      case 2:
        return bounded('/api/v1/skiptrace', org.stk, {
          address: { line1: `${i % 5} Fault Line Rd`, city: 'Austin', state: 'TX', zip: '78701' },
        });
      default:
        return bounded('/graphql', service === undefined ? '' : platform, {
          query: `mutation($u: ID!) { publishNotifications(input: [{ userId: $u, notificationType: "task_assigned", title: "t", body: "b" }]) { id } }`,
          variables: { u: org.userId },
        });
    }
  });
}
let platform = '';

/** The invariants that must survive any fault: balances equal their ledgers, counters equal their rows. */
async function expectConsistent() {
  const client = await database();
  const balances = await client.query(
    `select o.id, o.skip_trace_credits, coalesce(sum(l.amount), 0)::int as ledger
       from organizations o left join skip_trace_credit_ledger l on l.organization_id = o.id
      where o.id = $1 group by o.id`,
    [org.organizationId],
  );
  expect(balances.rows[0].skip_trace_credits).toBe(balances.rows[0].ledger);
  const charges = await client.query(
    `select (select count(*)::int from skip_trace_credit_ledger where organization_id = $1 and kind = 'charge') as charges,
            (select count(*)::int from skip_trace_requests where organization_id = $1 and charged) as charged_calls`,
    [org.organizationId],
  );
  expect(charges.rows[0].charges).toBe(charges.rows[0].charged_calls);
  const counters = await client.query(
    `select coalesce(c.notification_type, n.notification_type) as type, coalesce(c.unread_count, 0) as c_unread, coalesce(n.unread, 0)::int as unread,
            coalesce(c.read_count, 0) as c_read, coalesce(n.read, 0)::int as read
       from (select * from notification_counters where user_id = $1) c
       full join (select notification_type, count(*) filter (where not is_seen) as unread, count(*) filter (where is_seen) as read
                    from notification_states() where user_id = $1 group by notification_type) n on n.notification_type = c.notification_type`,
    [org.userId],
  );
  for (const row of counters.rows) expect([row.c_unread, row.c_read]).toEqual([row.unread, row.read]);
}

async function expectRecovered() {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await bounded('/api/v1/call', org.gk, { operationId: 'getNotificationCounts' });
    if (result.status === 200) break;
    if (Date.now() > deadline) throw new Error(`not recovered: ${JSON.stringify(result)}`);
    await sleep(250);
  }
  const all = await load(40);
  // A user's marks past the ones waiting for their turn are refused (429 concurrency_limit): the
  // load sends ten of one user's marks sixteen requests at a time.
  const served = (r: { status: number; code?: string }) =>
    r.status === 200 || r.status === 402 || (r.status === 429 && r.code === 'concurrency_limit');
  expect(all.filter((r) => !served(r))).toEqual([]);
}

beforeAll(async () => {
  await adminQuery(`create database ${faultDatabase}`);
  vendor = await startFakeVendor();
  service = await spawnService({
    DATABASE_URL: databaseUrl,
    SKIPTRACE_PROVIDER: 'http',
    SKIPTRACE_PROVIDER_URL: vendor.url,
    SKIPTRACE_PROVIDER_KEY: vendor.apiKey,
    GATEWAY_RATE_LIMIT_PER_MIN: '100000',
    SKIPTRACE_RATE_LIMIT_PER_MIN: '100000',
    SKIPTRACE_MAX_IN_FLIGHT: '1000',
  });
  const { platformToken } = await import('./spawn-service.js');
  platform = platformToken;
  const created = await graphql(
    service,
    `
      mutation {
        createOrganization(name: "Faults") {
          id
        }
      }
    `,
  );
  const organizationId = created.body.data.createOrganization.id;
  await graphql(
    service,
    `
      mutation ($o: ID!) {
        addSkipTraceCredits(organizationId: $o, amount: 100000, reference: "seed") {
          id
        }
      }
    `,
    { o: organizationId },
  );
  const stk = (
    await graphql(
      service,
      `
        mutation ($o: ID!) {
          generateSkipTraceKey(organizationId: $o) {
            secret
          }
        }
      `,
      { o: organizationId },
    )
  ).body.data.generateSkipTraceKey.secret;
  const user = (
    await graphql(
      service,
      `
        mutation ($o: ID!, $e: String!) {
          createUser(organizationId: $o, email: $e) {
            id
          }
        }
      `,
      { o: organizationId, e: `${randomUUID()}@example.com` },
    )
  ).body.data.createUser.id;
  const gk = (
    await graphql(
      service,
      `
        mutation ($u: ID!) {
          createApiKey(userId: $u, scopes: [READ, WRITE]) {
            secret
          }
        }
      `,
      { u: user },
    )
  ).body.data.createApiKey.secret;
  org = { organizationId, stk, userId: user, gk };
  await graphql(
    service,
    `
      mutation ($u: ID!) {
        publishNotifications(input: [{ userId: $u, notificationType: "deal_created", title: "seed", body: "b" }]) {
          id
        }
      }
    `,
    { u: user },
  );
});
afterAll(async () => {
  await service?.stop();
  await vendor?.close();
  await db?.end().catch(() => undefined);
  await adminQuery(`drop database if exists ${faultDatabase} with (force)`);
});

describe('faults', () => {
  it('answers within a bounded time while its PostgreSQL connections are killed, then recovers with consistent state', async () => {
    const running = load(400);
    let killed = 0;
    for (let i = 0; i < 5; i++) {
      await sleep(150);
      const client = await database();
      const result = await client.query(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
      );
      killed += result.rowCount ?? 0;
    }
    const results = await running;
    expect(killed).toBeGreaterThan(0);
    console.info(
      `killed ${killed} connections; statuses:`,
      JSON.stringify(Object.fromEntries(results.reduce((m, r) => m.set(r.status, (m.get(r.status) ?? 0) + 1), new Map<number, number>()))),
    );
    expect(results.every((r) => r.status !== 0 && r.ms < REQUEST_BOUND_MS)).toBe(true);
    expect(results.every((r) => r.status < 500 || r.code === 'internal_error' || r.status === 503)).toBe(true);
    expect(service.child.exitCode).toBeNull();
    await expectRecovered();
    await expectConsistent();
  });

  it('survives a PostgreSQL restart: errors while it is down, never a hang, and recovers by itself', async () => {
    const running = load(300, 8);
    await sleep(200);
    await db?.end().catch(() => undefined);
    db = null;
    const cluster = readdirSync('/etc/postgresql')[0];
    execSync(`pg_ctlcluster --skip-systemctl-redirect ${cluster} main restart`, { stdio: 'ignore', timeout: 60_000 });
    const results = await running;
    expect(results.every((r) => r.status !== 0 && r.ms < REQUEST_BOUND_MS)).toBe(true);
    expect(service.child.exitCode).toBeNull();
    await expectRecovered();
    await expectConsistent();
  });

  it('keeps serving from in-process windows while Redis is down, reports it on /readyz, and shares again once it returns', async () => {
    const port = new URL(redisUrl).port || '6379';
    execSync(`redis-cli -p ${port} shutdown nosave`, { stdio: 'ignore' });
    try {
      await sleep(300);
      const results = await load(120);
      expect(results.filter((r) => r.status >= 500)).toEqual([]);
      const ready = await fetch(`${service.url}/readyz`);
      expect(ready.status).toBe(503);
      expect((await ready.json()).checks.redis).toBe('down');
    } finally {
      execSync(
        `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port ${port} --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log`,
        { stdio: 'ignore' },
      );
    }
    const deadline = Date.now() + 30_000;
    while ((await fetch(`${service.url}/readyz`)).status !== 200) {
      if (Date.now() > deadline) throw new Error('not ready again after Redis returned');
      await sleep(250);
    }
    // Shared windows are back: the key's window lives in Redis again.
    const before = await json(`${service.url}/api/v1/call`, {
      bearer: org.gk,
      body: JSON.stringify({ operationId: 'getNotificationCounts' }),
    });
    expect(before.status).toBe(200);
    const keys = execSync(`redis-cli -p ${port} --scan --pattern 'rl:gateway:*'`).toString().trim();
    expect(keys.length).toBeGreaterThan(0);
    await expectConsistent();
  });

  it('drains in-flight traces on SIGTERM: each finishes with a charge or fails cleanly without one, and the process exits', async () => {
    vendor.reset();
    vendor.setMode('slow');
    vendor.setDelay(1000);
    const line = randomUUID().slice(0, 8);
    const inFlight = Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        bounded('/api/v1/skiptrace', org.stk, { address: { line1: `${i} ${line} Drain St`, city: 'Austin', state: 'TX', zip: '78701' } }),
      ),
    );
    await sleep(300);
    const started = Date.now();
    const exit = service.stop('SIGTERM');
    const results = await inFlight;
    expect(await exit).toBe(0);
    expect(Date.now() - started).toBeLessThan(11_000);
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    await expectConsistent();
  });
});
