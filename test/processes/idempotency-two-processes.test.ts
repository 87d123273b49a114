/**
 * `Idempotency-Key` across two server processes sharing PostgreSQL and Redis: a key's first
 * request claims it in the database, so a race over both processes charges once and calls the
 * vendor once, a 504's retry on the other process finds the cached trace, and a stored answer
 * outlives the process that stored it.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { vendorEnv, type FakeVendor } from '../support/fake-vendor.js';
import { raceOneKey, sleep } from '../support/billing.js';
import { json, ledgerOf, skipTraceOrganization, spawnService, useTwoProcesses, type ServiceProcess } from './spawn-service.js';

// Well above the slow vendor's 300 ms, so a loaded machine does not turn the race's winner into a 504.
const TIMEOUT_MS = 3000;
const env = (vendor: FakeVendor) => ({
  ...vendorEnv(vendor),
  SKIPTRACE_TIMEOUT_MS: String(TIMEOUT_MS),
  SKIPTRACE_RATE_LIMIT_PER_MIN: '100000',
  SKIPTRACE_MAX_IN_FLIGHT: '1000',
});

let vendor: FakeVendor;
let a: ServiceProcess;
let b: ServiceProcess;
let db: pg.Client;
useTwoProcesses(env, (started) => ({ vendor, a, b, db } = started));

const organization = (credits: number) => skipTraceOrganization(a, b, credits);

const trace = (service: ServiceProcess, stk: string, body: unknown, key: string) =>
  json(`${service.url}/api/v1/skiptrace`, { bearer: stk, body: JSON.stringify(body), headers: { 'idempotency-key': key } });
const body = () => ({ address: { line1: `${randomUUID().slice(0, 8)} Idempotent Way`, city: 'Austin', state: 'TX', zip: '78701' } });

const ledger = (organizationId: string) => ledgerOf(db, organizationId);

describe('Idempotency-Key across two server processes', () => {
  it('50 concurrent requests with one key over both processes: one charge, one vendor call, each answer the replay of one id or 409', async () => {
    vendor.reset();
    vendor.setMode('slow');
    vendor.setDelay(300);
    const org = await organization(10);
    const key = randomUUID();
    const request = body();
    const id = await raceOneKey((i) => trace(i % 2 ? a : b, org.stk, request, key));
    expect(vendor.calls).toHaveLength(1);
    expect(await ledger(org.organizationId)).toEqual({ credits: 9, charges: [id] });

    // The stored answer outlives the processes that served it: a process started afterwards replays it.
    const later = await spawnService(env(vendor));
    try {
      const replay = await trace(later, org.stk, request, key);
      expect({ status: replay.status, id: replay.body.id, replayed: replay.headers.get('idempotent-replayed') }).toEqual({
        status: 200,
        id,
        replayed: 'true',
      });
    } finally {
      await later.stop();
    }
    expect(await ledger(org.organizationId)).toEqual({ credits: 9, charges: [id] });
  });

  it("a key's retry on the other process after a 504 finds the cached trace once it lands, charged once", async () => {
    vendor.reset();
    vendor.setMode('slow');
    vendor.setDelay(TIMEOUT_MS + 500);
    const org = await organization(5);
    const key = randomUUID();
    const request = body();
    const first = await trace(a, org.stk, request, key);
    expect({ status: first.status, code: first.body.error?.code }).toEqual({ status: 504, code: 'timeout' });
    await sleep(1500);
    const retry = await trace(b, org.stk, request, key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('x-cache')).toBe('hit');
    expect(vendor.calls).toHaveLength(1);
    expect(await ledger(org.organizationId)).toEqual({ credits: 4, charges: [retry.body.id] });
  });
});
