import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { vendorEnv, type FakeVendor } from '../support/fake-vendor.js';
import { graphql, json, pool, skipTraceOrganization, useTwoProcesses, type ServiceProcess } from './spawn-service.js';

let vendor: FakeVendor;
let a: ServiceProcess;
let b: ServiceProcess;
let db: pg.Client;

const GATEWAY_LIMIT = 40;

useTwoProcesses(
  (fakeVendor) => ({
    ...vendorEnv(fakeVendor),
    GATEWAY_RATE_LIMIT_PER_MIN: String(GATEWAY_LIMIT),
    SKIPTRACE_RATE_LIMIT_PER_MIN: '100000',
    SKIPTRACE_MAX_IN_FLIGHT: '1000',
  }),
  (started) => ({ vendor, a, b, db } = started),
);

const organization = (credits: number) => skipTraceOrganization(a, b, credits);

async function gatewayKey(organizationId: string) {
  const user = await graphql(
    a,
    `
      mutation ($o: ID!, $e: String!) {
        createUser(organizationId: $o, email: $e) {
          id
        }
      }
    `,
    { o: organizationId, e: `${randomUUID()}@example.com` },
  );
  const key = await graphql(
    a,
    `
      mutation ($u: ID!) {
        createApiKey(userId: $u, scopes: [READ, WRITE]) {
          id
          secret
        }
      }
    `,
    { u: user.body.data.createUser.id },
  );
  return key.body.data.createApiKey as { id: string; secret: string };
}

const trace = (service: ServiceProcess, stk: string, line1: string) =>
  json(`${service.url}/api/v1/skiptrace`, {
    bearer: stk,
    body: JSON.stringify({ address: { line1, city: 'Austin', state: 'TX', zip: '78701' } }),
  });
const list = (service: ServiceProcess, key: string) =>
  json(`${service.url}/api/v1/call`, { bearer: key, body: JSON.stringify({ operationId: 'listNotifications' }) });

describe('two server processes sharing PostgreSQL and Redis', () => {
  it('refuses a gateway key revoked through one process on the other at the very next request', async () => {
    const { organizationId } = await organization(0);
    const key = await gatewayKey(organizationId);
    expect((await list(b, key.secret)).status).toBe(200);
    await graphql(
      a,
      `
        mutation ($id: ID!) {
          revokeApiKey(id: $id)
        }
      `,
      { id: key.id },
    );
    expect((await list(b, key.secret)).status).toBe(401);
  });

  it('refuses a skip trace key rotated through one process on the other at the very next request', async () => {
    const org = await organization(5);
    const line1 = `${randomUUID().slice(0, 8)} Rotation Rd`;
    expect((await trace(b, org.stk, line1)).status).toBe(200);
    const rotated = await graphql(
      a,
      `
        mutation ($o: ID!) {
          rotateSkipTraceKey(organizationId: $o) {
            secret
          }
        }
      `,
      { o: org.organizationId },
    );
    expect((await trace(b, org.stk, line1)).status).toBe(401);
    expect((await trace(b, rotated.body.data.rotateSkipTraceKey.secret, line1)).status).toBe(200);
  });

  it('shares the per-key rate window: the sum over both processes never exceeds the limit', async () => {
    const { organizationId } = await organization(0);
    const key = await gatewayKey(organizationId);
    const results = await pool(GATEWAY_LIMIT * 3, 20, (i) => list(i % 2 ? a : b, key.secret));
    expect(results.filter((r) => r.status === 200)).toHaveLength(GATEWAY_LIMIT);
    expect(results.filter((r) => r.status === 429)).toHaveLength(GATEWAY_LIMIT * 2);
    expect(results.some((r) => r.status === 200 && r.headers.get('x-ratelimit-limit') === String(GATEWAY_LIMIT))).toBe(true);
  });

  it('shares one vendor call among identical traces on both processes', async () => {
    vendor.reset();
    vendor.setMode('slow');
    vendor.setDelay(400);
    const org = await organization(10);
    const line1 = `${randomUUID().slice(0, 8)} Single Flight St`;
    const results = await Promise.all([a, b, a, b, a, b].map((service) => trace(service, org.stk, line1)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(vendor.calls).toHaveLength(1);
  });

  it('gives exactly as many 200s as credits when 2,000 calls race across both processes against 500 credits', async () => {
    vendor.reset();
    const org = await organization(500);
    const line1 = `${randomUUID().slice(0, 8)} Race Track Blvd`;
    const results = await pool(2000, 64, (i) => trace(i % 2 ? a : b, org.stk, line1));
    const statuses = new Map<number, number>();
    for (const r of results) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    expect(Object.fromEntries(statuses)).toEqual({ 200: 500, 402: 1500 });
    const { rows } = await db.query(
      `select o.skip_trace_credits as balance,
              (select count(*)::int from skip_trace_credit_ledger l where l.organization_id = o.id and kind = 'charge') as charges,
              (select coalesce(sum(amount), 0)::int from skip_trace_credit_ledger l where l.organization_id = o.id) as ledger_sum
         from organizations o where o.id = $1`,
      [org.organizationId],
    );
    expect(rows[0]).toEqual({ balance: 0, charges: 500, ledger_sum: 0 });
    // Every 200 has its own ledger charge, by request id.
    const ids = results.filter((r) => r.status === 200).map((r) => r.body.id);
    const charged = await db.query(`select count(*)::int as n from skip_trace_credit_ledger where request_id = any($1::uuid[])`, [ids]);
    expect(charged.rows[0].n).toBe(500);
    expect(vendor.calls.length).toBeLessThanOrEqual(1);
  });
});
