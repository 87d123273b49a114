/**
 * `Idempotency-Key` across two server processes sharing PostgreSQL and Redis: a key's first
 * request claims it in the database, so a race over both processes charges once and calls the
 * vendor once, a 504's retry on the other process finds the cached trace, and a stored answer
 * outlives the process that stored it.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendor, type FakeVendor } from '../support/fake-vendor.js';
import { graphql, json, requireRealBackends, spawnService, type ServiceProcess } from './spawn-service.js';

const { databaseUrl } = requireRealBackends();
const TIMEOUT_MS = 1000;
const env = (vendor: FakeVendor) => ({
  SKIPTRACE_PROVIDER: 'http',
  SKIPTRACE_PROVIDER_URL: vendor.url,
  SKIPTRACE_PROVIDER_KEY: vendor.apiKey,
  SKIPTRACE_TIMEOUT_MS: String(TIMEOUT_MS),
  SKIPTRACE_RATE_LIMIT_PER_MIN: '100000',
  SKIPTRACE_MAX_IN_FLIGHT: '1000',
});

let vendor: FakeVendor;
let a: ServiceProcess;
let b: ServiceProcess;
let db: pg.Client;

beforeAll(async () => {
  vendor = await startFakeVendor();
  [a, b] = await Promise.all([spawnService(env(vendor)), spawnService(env(vendor))]);
  db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await vendor?.close();
  await db?.end();
});

async function organization(credits: number) {
  const org = await graphql(
    a,
    `
      mutation {
        createOrganization(name: "Idempotency") {
          id
        }
      }
    `,
  );
  const organizationId = org.body.data.createOrganization.id as string;
  await graphql(
    a,
    `
      mutation ($o: ID!, $n: Int!) {
        addSkipTraceCredits(organizationId: $o, amount: $n, reference: "seed") {
          id
        }
      }
    `,
    {
      o: organizationId,
      n: credits,
    },
  );
  const key = await graphql(
    b,
    `
      mutation ($o: ID!) {
        generateSkipTraceKey(organizationId: $o) {
          secret
        }
      }
    `,
    { o: organizationId },
  );
  return { organizationId, stk: key.body.data.generateSkipTraceKey.secret as string };
}

const trace = (service: ServiceProcess, stk: string, body: unknown, key: string) =>
  json(`${service.url}/api/v1/skiptrace`, { bearer: stk, body: JSON.stringify(body), headers: { 'idempotency-key': key } });
const body = () => ({ address: { line1: `${randomUUID().slice(0, 8)} Idempotent Way`, city: 'Austin', state: 'TX', zip: '78701' } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function ledger(organizationId: string) {
  const { rows } = await db.query(
    `select o.skip_trace_credits as credits,
            coalesce((select array_agg(request_id::text) from skip_trace_credit_ledger l where l.organization_id = o.id and kind = 'charge'), '{}') as charges
       from organizations o where o.id = $1`,
    [organizationId],
  );
  return rows[0] as { credits: number; charges: string[] };
}

describe('Idempotency-Key across two server processes', () => {
  it('50 concurrent requests with one key over both processes: one charge, one vendor call, each answer the replay of one id or 409', async () => {
    vendor.reset();
    vendor.setMode('slow');
    vendor.setDelay(300);
    const org = await organization(10);
    const key = randomUUID();
    const request = body();
    const race = (count: number) => Promise.all(Array.from({ length: count }, (_, i) => trace(i % 2 ? a : b, org.stk, request, key)));
    // 25 at once over both processes, while the first is in flight; then 25 more at once after it has answered.
    const during = await race(25);
    const after = await race(25);
    expect(after.every((r) => r.status === 200 && r.headers.get('idempotent-replayed') === 'true')).toBe(true);
    const results = [...during, ...after];
    const ok = results.filter((r) => r.status === 200);
    const inUse = results.filter((r) => r.status === 409);
    expect(ok.length + inUse.length).toBe(50);
    expect(inUse.every((r) => r.body.error.code === 'idempotency_key_in_use')).toBe(true);
    expect(new Set(ok.map((r) => r.body.id)).size).toBe(1);
    expect(ok.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(inUse.length).toBeGreaterThan(0);
    expect(vendor.calls).toHaveLength(1);
    expect(await ledger(org.organizationId)).toEqual({ credits: 9, charges: [ok[0].body.id] });

    // The stored answer outlives the processes that served it: a new process replays it.
    await a.stop();
    a = await spawnService(env(vendor));
    const later = await trace(a, org.stk, request, key);
    expect({ status: later.status, id: later.body.id, replayed: later.headers.get('idempotent-replayed') }).toEqual({
      status: 200,
      id: ok[0].body.id,
      replayed: 'true',
    });
    expect(await ledger(org.organizationId)).toEqual({ credits: 9, charges: [ok[0].body.id] });
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
    await sleep(800);
    const retry = await trace(b, org.stk, request, key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('x-cache')).toBe('hit');
    expect(vendor.calls).toHaveLength(1);
    expect(await ledger(org.organizationId)).toEqual({ credits: 4, charges: [retry.body.id] });
  });
});
