/**
 * The statements a job's items send (job-items.ts, job-worker.ts): the opening reads of the items
 * a claim started go as one statement, and the charges of the items ready together (each with its
 * own result) as one more, so a job of cached traces sends fewer of either than it has items.
 * Counted on the statements the service's own connection to the database sends.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { TestService } from '../support/harness.js';
import { eventually, ledger, setupBillingOrg, uniqueAddress } from '../support/billing.js';
import { allResults, jobEnded, postJob, useJobServices } from '../support/jobs.js';
import { chargeItems, renewLeases, type ItemCharge } from '../../src/skip-trace/jobs/job-queue.data.js';
import type { ClaimedItem } from '../../src/skip-trace/jobs/jobs.data.js';

let vendor: FakeVendor;
let service: TestService;

useJobServices([{}], (started) => {
  [service] = started.services;
  vendor = started.vendor;
});

/** Records the text and values of every statement the service sends until `stop` is called. */
async function recordStatements(target: TestService): Promise<{ sent: { text: string; values: unknown[] }[]; stop: () => void }> {
  const sent: { text: string; values: unknown[] }[] = [];
  const connection = target.app.services.orm.em.getConnection();
  if (process.env.DATABASE_URL) {
    const pool = (await connection.getNativeClient()) as pg.Pool & { query: (...args: unknown[]) => unknown };
    const query = pool.query;
    pool.query = function (this: unknown, ...args: unknown[]) {
      const config = args[0] as { text?: string; values?: unknown[] } | string;
      if (typeof config === 'object' && config.text) sent.push({ text: config.text, values: config.values ?? [] });
      return query.apply(pool, args as Parameters<typeof query>);
    } as typeof pool.query;
    return { sent, stop: () => (pool.query = query) };
  }
  const client = connection.getClient() as unknown as {
    executeQuery: (compiled: { sql: string; parameters: readonly unknown[] }) => Promise<unknown>;
  };
  const executeQuery = client.executeQuery;
  client.executeQuery = function (compiled) {
    sent.push({ text: compiled.sql, values: [...compiled.parameters] });
    return executeQuery.call(client, compiled);
  };
  return { sent, stop: () => (client.executeQuery = executeQuery) };
}

const isBatchedOpen = (text: string) => text.includes('jsonb_to_recordset') && text.includes('from skip_trace_results');
const isSingleOpen = (text: string) => text.includes('left join (select status, persons from skip_trace_results');
const isCharge = (text: string) => text.includes('insert into skip_trace_credit_ledger') && text.includes('jsonb_to_recordset');

/** The key id of a billing organization made by `setupBillingOrg`. */
async function keyIdOf(organizationId: string): Promise<string> {
  const [{ key_id: keyId }] = await service.sql(`select id::text as key_id from skip_trace_keys where organization_id = ?`, [
    organizationId,
  ]);
  return keyId as string;
}

/** The charge of item `index` of a job, as the worker sends it: found, with `persons`. */
function foundCharge(organizationId: string, keyId: string, jobId: string, index: number, persons: unknown[]): ItemCharge {
  const item: ClaimedItem = { jobId, index, organizationId, keyId, key: `k${index}`, input: {}, attempts: 1 };
  const entry = {
    id: randomUUID(),
    principal: { type: 'organization' as const, keyId, keyHint: '', organizationId },
    startedAt: performance.now(),
    outcome: 'records_found',
    cacheKey: `c${index}`,
    cacheHit: true,
    list: { batchId: null, jobId, key: `k${index}` },
  };
  return { item, entry, outcome: { status: 'records_found', id: entry.id, persons: persons as never[], error: null } };
}

describe("a job's statements", () => {
  it('one opening read for the items a claim started, one charge statement for the items ready together: fewer than the items', async () => {
    const org = await setupBillingOrg(service, 100);
    const addresses = Array.from({ length: 20 }, () => uniqueAddress());
    // Every address traced (and cached) first.
    const warm = await postJob(service, org.key, { items: addresses.map((address) => ({ address })) });
    expect((await jobEnded(service, org.key, warm.body.id)).counts.recordsFound).toBe(20);
    expect(vendor.calls).toHaveLength(20);

    const recording = await recordStatements(service);
    const job = await postJob(service, org.key, { items: [...addresses, ...addresses].map((address) => ({ address })) });
    const ended = await jobEnded(service, org.key, job.body.id);
    recording.stop();

    expect(ended.counts).toMatchObject({ recordsFound: 40, charged: 40, pending: 0 });
    expect(vendor.calls).toHaveLength(20);
    const results = await allResults(service, org.key, job.body.id);
    expect(results.map((result) => result.status)).toEqual(Array(40).fill('records_found'));
    expect((await ledger(service, org.organizationId)).credits).toBe(40);

    const { sent } = recording;
    expect(sent.filter((s) => isSingleOpen(s.text))).toHaveLength(0);
    const opens = sent.filter((s) => isBatchedOpen(s.text));
    // Each batched read names its items: together, every item once.
    const opened = opens.flatMap((s) => JSON.parse(s.values[0] as string) as { cache_key: string }[]);
    expect(opened).toHaveLength(40);
    expect(opens.length).toBeLessThan(40);
    // Likewise the charges: each item charged once, items ready together in one statement.
    const charges = sent.filter((s) => isCharge(s.text));
    const charged = charges.flatMap((s) => JSON.parse(s.values[0] as string) as { index: number }[]);
    expect(charged.map((c) => c.index).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(charges.length).toBeLessThan(40);
  });
});

describe('the statement that charges items together', () => {
  it('charges in index order while the balance lasts, each with its result, ledger and audit rows; a lost lease writes nothing', async () => {
    const org = await setupBillingOrg(service, 3);
    const keyId = await keyIdOf(org.organizationId);
    const jobId = randomUUID();
    const lease = { token: randomUUID(), ms: 60_000 };
    const other = randomUUID();
    // Six items held under this lease (item 4 under another's): the service's own worker cannot claim them.
    await service.sql(
      `insert into skip_trace_jobs (id, organization_id, key_id, total, pending, status) values (?, ?, ?, 6, 6, 'running')`,
      [jobId, org.organizationId, keyId],
    );
    for (let index = 0; index < 6; index++)
      await service.sql(
        `insert into skip_trace_job_items (job_id, index, organization_id, input, lease_token, lease_until) values (?, ?, ?, '{}'::jsonb, ?, now() + interval '1 minute')`,
        [jobId, index, org.organizationId, index === 4 ? other : lease.token],
      );
    const person = { name: 'X' };
    const charge = (index: number) => foundCharge(org.organizationId, keyId, jobId, index, [person]);
    const charges = [5, 3, 0, 4, 1, 2].map(charge);
    const outcomes = await chargeItems(service.app.services.sql, lease, org.organizationId, charges);
    expect(outcomes).toEqual([
      'no_credit',
      'no_credit',
      { creditsRemaining: 2 },
      'guard_failed',
      { creditsRemaining: 1 },
      { creditsRemaining: 0 },
    ]);

    const items = await service.sql(
      `select index, status, request_id::text as request_id, persons, lease_token::text as lease_token from skip_trace_job_items where job_id = ? order by index`,
      [jobId],
    );
    const charged = [0, 1, 2].map((index) => charges.find((c) => c.item.index === index)!.entry.id);
    const parse = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value);
    expect(items.map((row) => [row.status, row.request_id, parse(row.persons), row.lease_token])).toEqual([
      ...charged.map((id) => ['records_found', id, [person], null]),
      ['pending', null, null, lease.token],
      ['pending', null, null, other],
      ['pending', null, null, lease.token],
    ]);
    const [job] = await service.sql(`select pending, records_found, charged, status from skip_trace_jobs where id = ?`, [jobId]);
    expect(job).toEqual({ pending: 3, records_found: 3, charged: 3, status: 'running' });
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 0, charges: [...charged].sort() });
    const audit = await service.sql(
      `select id::text as id, job_id::text as job_id, key, cache_key, charged, cache_hit, outcome from skip_trace_requests where organization_id = ? order by key`,
      [org.organizationId],
    );
    expect(audit).toEqual(
      [0, 1, 2].map((index) => ({
        id: charged[index],
        job_id: jobId,
        key: `k${index}`,
        cache_key: `c${index}`,
        charged: true,
        cache_hit: true,
        outcome: 'records_found',
      })),
    );
  });
});

describe('lease renewals beside charges', () => {
  it('a renewal and a charge of the same items, locking them in opposite orders, never deadlock', async () => {
    const org = await setupBillingOrg(service, 1000);
    const keyId = await keyIdOf(org.organizationId);
    const db = service.app.services.sql;
    const lease = { token: randomUUID(), ms: 60_000 };
    const ITEMS = 30;
    const failures: unknown[] = [];
    for (let round = 0; round < 10; round++) {
      const jobId = randomUUID();
      await service.sql(
        `insert into skip_trace_jobs (id, organization_id, key_id, total, pending, status) values (?, ?, ?, ?, ?, 'running')`,
        [jobId, org.organizationId, keyId, ITEMS, ITEMS],
      );
      await service.sql(
        `insert into skip_trace_job_items (job_id, index, organization_id, input, lease_token, lease_until)
         select ?, i, ?, '{}'::jsonb, ?, now() + interval '1 minute' from generate_series(0, ? - 1) i`,
        [jobId, org.organizationId, lease.token, ITEMS],
      );
      const charges = Array.from({ length: ITEMS }, (_, index) => foundCharge(org.organizationId, keyId, jobId, index, []));
      const items = charges.map((charge) => charge.item);
      // The worker renews in claim order while items finish, and are charged, in any other.
      const settled = await Promise.allSettled([
        renewLeases(db, lease, items),
        chargeItems(db, lease, org.organizationId, charges.toReversed()),
        renewLeases(db, lease, items),
      ]);
      failures.push(...settled.flatMap((s) => (s.status === 'rejected' ? [String(s.reason)] : [])));
      const [job] = await service.sql(`select pending, charged from skip_trace_jobs where id = ?`, [jobId]);
      expect(job).toEqual({ pending: 0, charged: ITEMS });
    }
    expect(failures).toEqual([]);
  });
});

describe.skipIf(!process.env.DATABASE_URL)('a charge statement that fails outright (PostgreSQL: more connections)', () => {
  it('runs its items again: each resolved and charged exactly once, none stored as internal_error', async () => {
    const org = await setupBillingOrg(service, 10);
    const { database } = service.app.services.config;
    if (database.kind !== 'postgres') throw new Error('needs PostgreSQL');
    // One connection holds the organization's balance row, so the job's charge statement waits on
    // it; another (whose view of pg_stat_activity is not held by an open transaction) ends it there.
    const [blocker, observer] = [new pg.Client({ connectionString: database.url }), new pg.Client({ connectionString: database.url })];
    await Promise.all([blocker.connect(), observer.connect()]);
    try {
      await blocker.query('begin');
      // No key update: rows that reference the organization (the job's) are still written meanwhile.
      await blocker.query('select 1 from organizations where id = $1 for no key update', [org.organizationId]);
      const job = await postJob(service, org.key, { items: [0, 1, 2].map((i) => ({ key: `k${i}`, address: uniqueAddress() })) });
      expect(job.status).toBe(202);
      const charging = await eventually(async () => {
        const { rows } = await observer.query<{ pid: number }>(
          `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
             and query like 'with input as (select * from jsonb_to_recordset(%'`,
        );
        return rows.length > 0 ? rows : undefined;
      }, 10_000);
      for (const { pid } of charging) await observer.query('select pg_terminate_backend($1)', [pid]);
      await blocker.query('commit');

      const ended = await jobEnded(service, org.key, job.body.id);
      expect(ended.counts).toMatchObject({ total: 3, recordsFound: 3, failed: 0, charged: 3, pending: 0 });
      const results = await allResults(service, org.key, job.body.id);
      expect(results.map((r) => [r.key, r.status, r.error])).toEqual([0, 1, 2].map((i) => [`k${i}`, 'records_found', null]));
      expect(await ledger(service, org.organizationId)).toEqual({ credits: 7, charges: results.map((r) => r.id as string).sort() });
      const [{ attempts }] = await service.sql(`select max(attempts)::int as attempts from skip_trace_job_items where job_id = ?`, [
        job.body.id,
      ]);
      expect(attempts).toBeGreaterThan(1);
    } finally {
      await Promise.all([blocker.end(), observer.end()]);
    }
  });
});
