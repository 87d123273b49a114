/**
 * A job survives its process being killed outright (contract 7.2): SIGKILL mid-job, start the
 * service again on the same database (PostgreSQL, and an embedded data dir), and the job resumes
 * and completes; every item is resolved, and charged exactly once: the credits taken, the usage
 * rows charged for the job and the items with a result are the same, one for one.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendor, type FakeVendor } from '../support/fake-vendor.js';
import { json, requireRealBackends, skipTraceOrganization, spawnService, type ServiceProcess } from './spawn-service.js';

const backends = requireRealBackends();
const ITEMS = 300;
const CREDITS = 1000;

let vendor: FakeVendor;
const running: ServiceProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  vendor = await startFakeVendor();
  // Slow enough that the kill lands mid-job: 300 items, 10 at a time, 100 ms each.
  vendor.setMode('slow');
  vendor.setDelay(100);
});
afterAll(async () => {
  for (const service of running) await service.stop('SIGKILL');
  for (const cleanup of cleanups) await cleanup();
  await vendor?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const service = await spawnService(env);
  running.push(service);
  return service;
}

const get = (service: ServiceProcess, key: string, path: string) => json(`${service.url}${path}`, { method: 'GET', bearer: key });

/** Polls the job until `done` says so. */
async function until(service: ServiceProcess, key: string, id: string, done: (job: any) => boolean, ms = 90_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = (await get(service, key, `/api/v1/skiptrace/jobs/${id}`)).body;
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job not there within ${ms} ms: ${JSON.stringify(job)}`);
    await sleep(100);
  }
}

/** Every usage row of the organization (newest first, all pages). */
async function usage(service: ServiceProcess, key: string): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | null = null;
  do {
    const page: any = (await get(service, key, `/api/v1/skiptrace/usage?limit=200${cursor ? `&cursor=${cursor}` : ''}`)).body;
    rows.push(...page.requests);
    cursor = page.nextCursor;
  } while (cursor);
  return rows;
}

/** Every result of the job. */
async function results(service: ServiceProcess, key: string, id: string): Promise<any[]> {
  const all: any[] = [];
  let cursor: string | null = null;
  do {
    const page: any = (await get(service, key, `/api/v1/skiptrace/jobs/${id}/results?limit=1000${cursor ? `&cursor=${cursor}` : ''}`)).body;
    all.push(...page.results);
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

async function killMidJobAndResume(env: Record<string, string>) {
  const jobEnv = { ...env, SKIPTRACE_PROVIDER: 'http', SKIPTRACE_PROVIDER_URL: vendor.url, SKIPTRACE_PROVIDER_KEY: vendor.apiKey };
  // Short leases: the killed process's items are claimed again soon after it is gone. Its traces'
  // single-flight locks (PostgreSQL with Redis) outlive it: their items time out and are retried
  // until the locks run out, sooner with a shorter trace timeout.
  const settings = { ...jobEnv, SKIPTRACE_JOB_LEASE_MS: '1500', SKIPTRACE_JOB_POLL_MS: '100', SKIPTRACE_TIMEOUT_MS: '15000' };
  const first = await start(settings);
  const org = await skipTraceOrganization(first, first, CREDITS);
  const items = Array.from({ length: ITEMS }, (_, i) => ({
    key: `row-${i}`,
    address: { line1: `${i} ${randomUUID().slice(0, 8)} Kill Street`, city: 'Austin', state: 'TX', zip: '78701' },
  }));
  const created = await json(`${first.url}/api/v1/skiptrace/jobs`, { bearer: org.stk, body: JSON.stringify({ items }) });
  expect(created.status).toBe(202);
  const id = created.body.id as string;
  const before = await until(first, org.stk, id, (job) => job.counts.charged >= 40);
  expect(before.counts.pending).toBeGreaterThan(0);
  first.child.kill('SIGKILL');
  await first.exited;

  const second = await start(settings);
  const job = await until(second, org.stk, id, (current) => current.status === 'completed');
  const failures = (await results(second, org.stk, id)).filter((r) => r.status !== 'records_found');
  // On failure, what the resumed process logged says why (its log level is warn).
  expect(
    failures.map((r) => r.error),
    second.logs.join('').slice(-6000),
  ).toEqual([]);
  expect(job.counts).toEqual({ total: ITEMS, pending: 0, recordsFound: ITEMS, noRecordsFound: 0, failed: 0, cancelled: 0, charged: ITEMS });
  const all = await results(second, org.stk, id);
  expect(all.map((r) => r.status)).toEqual(Array(ITEMS).fill('records_found'));
  expect(all.map((r) => r.key)).toEqual(items.map((item) => item.key));
  const resultIds = all.map((r) => r.id as string).sort();
  expect(new Set(resultIds).size).toBe(ITEMS);
  // Charged exactly once each: the usage rows charged for the job are the results' ids, and the balance fell by as many.
  const charged = (await usage(second, org.stk)).filter((row) => row.jobId === id && row.charged);
  expect(charged.map((row) => row.id as string).sort()).toEqual(resultIds);
  const account = (await get(second, org.stk, '/api/v1/skiptrace/account')).body;
  expect(account.credits).toBe(CREDITS - ITEMS);
  await second.stop();
}

describe('a job whose process is killed mid-job', () => {
  it('on PostgreSQL: resumes on the next start, every item resolved and charged exactly once', async () => {
    const name = `jobkill_${randomUUID().slice(0, 8)}`;
    const admin = new pg.Client({ connectionString: backends.databaseUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    cleanups.push(async () => {
      const dropper = new pg.Client({ connectionString: backends.databaseUrl });
      await dropper.connect();
      await dropper.query(`drop database if exists ${name} with (force)`);
      await dropper.end();
    });
    const databaseUrl = Object.assign(new URL(backends.databaseUrl), { pathname: `/${name}` }).toString();
    await killMidJobAndResume({ DATABASE_URL: databaseUrl, REDIS_URL: backends.redisUrl });
  });

  it('embedded: resumes on the next start on the same data dir, every item resolved and charged exactly once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'job-kill-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    // Empty values count as unset, overriding the CI environment's real servers.
    await killMidJobAndResume({ DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir });
  });
});
