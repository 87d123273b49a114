import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendor, vendorEnv, type FakeVendor } from '../support/fake-vendor.js';
import { startService, usingRealBackends, type TestService } from '../support/harness.js';
import { eventually, sleep } from '../support/billing.js';
import { pipeline, WIRE_SLOW_RESPONSE, wireTrace } from '../support/pipelining.js';

// Two instances can only share state through a real PostgreSQL and Redis (PGlite is one process's).
describe.skipIf(!usingRealBackends || !process.env.REDIS_URL)('two instances sharing PostgreSQL and Redis', () => {
  let vendor: FakeVendor;
  let a: TestService;
  let b: TestService;

  beforeAll(async () => {
    vendor = await startFakeVendor();
    const env = { ...vendorEnv(vendor), SKIPTRACE_RATE_LIMIT_PER_MIN: '6' };
    a = await startService(env);
    // The second instance must accept the first one's platform token: same config, same secrets.
    b = await startService({ ...env, INTERNAL_API_TOKEN: a.platformToken });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await vendor?.close();
  });

  const trace = (service: TestService, key: string, body: unknown) =>
    service.request('/api/v1/skiptrace', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  async function setupOrg(credits: number) {
    const org = await a.graphql(`mutation { createOrganization(name: "Two instances") { id } }`);
    const organizationId = org.body.data.createOrganization.id as string;
    await a.graphql(`mutation($o: ID!, $n: Int!) { addSkipTraceCredits(organizationId: $o, amount: $n, reference: "seed") { id } }`, {
      o: organizationId,
      n: credits,
    });
    const key = await a.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: organizationId });
    return { organizationId, key: key.body.data.generateSkipTraceKey.secret as string };
  }

  it('shares one vendor call between identical traces on both instances', async () => {
    vendor.reset();
    vendor.setMode('slow');
    vendor.setDelay(300);
    const org = await setupOrg(10);
    const body = { address: { line1: `${randomUUID().slice(0, 6)} Shared Road`, city: 'Austin', state: 'TX', zip: '78701' } };
    const results = await Promise.all([trace(a, org.key, body), trace(b, org.key, body), trace(a, org.key, body), trace(b, org.key, body)]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(vendor.calls).toHaveLength(1);
  });

  it('refuses a key rotated through one instance on the other at the very next request', async () => {
    vendor.reset();
    const org = await setupOrg(10);
    const body = { address: { line1: `${randomUUID().slice(0, 6)} Rotate Lane`, city: 'Austin', state: 'TX', zip: '78701' } };
    expect((await trace(b, org.key, body)).status).toBe(200);
    const rotated = await a.graphql(`mutation($o: ID!) { rotateSkipTraceKey(organizationId: $o) { secret } }`, { o: org.organizationId });
    const fresh = rotated.body.data.rotateSkipTraceKey.secret as string;
    const old = await trace(b, org.key, body);
    expect({ status: old.status, code: old.body.error?.code }).toEqual({ status: 401, code: 'invalid_key' });
    expect((await trace(b, fresh, body)).status).toBe(200);
  });

  it('shares the per-key rate window: the sum over both instances never exceeds the limit', async () => {
    vendor.reset();
    const org = await setupOrg(50);
    const body = { address: { line1: `${randomUUID().slice(0, 6)} Window Way`, city: 'Austin', state: 'TX', zip: '78701' } };
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => trace(i % 2 ? a : b, org.key, body)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(6);
    expect(results.filter((r) => r.status === 429).every((r) => r.body.error.code === 'rate_limited' && r.headers.get('retry-after'))).toBe(
      true,
    );
  });

  it('keeps the charge of a first response lost on one instance once a replay on the other delivered it', async () => {
    vendor.reset();
    const org = await setupOrg(10);
    const body = { address: { line1: `${randomUUID().slice(0, 6)} Pipeline Pass`, city: 'Austin', state: 'TX', zip: '78701' } };
    const idempotencyKey = randomUUID();
    const balance = async () =>
      (await a.sql(`select skip_trace_credits::int as credits from organizations where id = ?`, [org.organizationId]))[0].credits as number;
    // On a: the trace is answered behind a response the client never reads.
    const stuck = pipeline(a.baseUrl, [WIRE_SLOW_RESPONSE, wireTrace(org.key, body, { 'Idempotency-Key': idempotencyKey })], {
      read: false,
    });
    await eventually(async () => ((await balance()) === 9 ? true : undefined));
    const replay = await b.request('/api/v1/skiptrace', {
      method: 'POST',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify(body),
    });
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
    stuck.socket.destroy();
    await stuck.closed;
    await sleep(400);
    expect(await balance()).toBe(9);
    const charges = await a.sql(
      `select request_id::text as id from skip_trace_credit_ledger where organization_id = ? and kind = 'charge'`,
      [org.organizationId],
    );
    expect(charges.map((row) => row.id)).toEqual([replay.body.id]);
  });
});
