import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeVendor, type FakeVendor } from '../support/fake-vendor.js';
import { startService, type TestService } from '../support/harness.js';

let vendor: FakeVendor;
let service: TestService;

// Well above the slow vendor delays below (200–300 ms), so a loaded machine does not turn them into timeouts.
const TIMEOUT_MS = 1000;

beforeAll(async () => {
  vendor = await startFakeVendor();
  service = await startService({
    SKIPTRACE_PROVIDER: 'http',
    SKIPTRACE_PROVIDER_URL: vendor.url,
    SKIPTRACE_PROVIDER_KEY: vendor.apiKey,
    SKIPTRACE_TIMEOUT_MS: String(TIMEOUT_MS),
    SKIPTRACE_MAX_IN_FLIGHT: '3',
  });
});
afterAll(async () => {
  await service?.close();
  await vendor?.close();
});
beforeEach(() => vendor.reset());

async function setupOrg(credits: number) {
  const org = await service.graphql(`mutation { createOrganization(name: "Vendor test") { id } }`);
  const organizationId = org.body.data.createOrganization.id as string;
  if (credits > 0)
    await service.graphql(`mutation($o: ID!, $n: Int!) { addSkipTraceCredits(organizationId: $o, amount: $n, reference: "seed") { id } }`, {
      o: organizationId,
      n: credits,
    });
  const key = await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: organizationId });
  return { organizationId, key: key.body.data.generateSkipTraceKey.secret as string };
}

/** A unique street per test, so cache entries of one test never serve another. */
const address = (street = `${Math.floor(Math.random() * 1e6)} ${randomUUID().slice(0, 8)} Street`) => ({
  line1: street,
  city: 'Austin',
  state: 'tx',
  zip: '78701',
});

const trace = (key: string, body: unknown) =>
  service.request('/api/v1/skiptrace', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

async function balance(organizationId: string) {
  const [row] = await service.sql(
    `select skip_trace_credits::int as credits, (select count(*)::int from skip_trace_credit_ledger where organization_id = ? and kind = 'charge') as charges from organizations where id = ?`,
    [organizationId, organizationId],
  );
  return row as { credits: number; charges: number };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('skip trace through the http vendor', () => {
  it('maps the vendor result and sends the standardized address', async () => {
    const org = await setupOrg(5);
    const house = Math.floor(Math.random() * 1e6);
    const result = await trace(org.key, {
      address: { line1: `${house} Main Street Apt 4`, city: 'Austin', state: 'tx', zip: '78701-1234' },
      actor: { type: 'person', firstName: 'John', lastName: "O'Neil" },
    });
    expect(result.status).toBe(200);
    expect(result.body.status).toBe('records_found');
    expect(result.body.id).toMatch(/^[0-9a-f-]{36}$/);
    for (const person of result.body.persons) {
      for (const phone of person.phones) {
        expect(phone.number).toMatch(/^\d+$/);
        expect(['mobile', 'residential', 'unknown']).toContain(phone.type);
      }
    }
    expect(vendor.calls).toHaveLength(1);
    const sent = vendor.calls[0].body.requests[0];
    expect(sent.propertyAddress).toEqual({ street: `${house} MAIN ST APT 4`, city: 'AUSTIN', state: 'TX', zip: '78701' });
    expect(sent.name).toEqual({ first: 'JOHN', last: 'ONEIL' });
  });

  it('answers a repeat from the cache with a new id, charging each call, without a new vendor call', async () => {
    const org = await setupOrg(5);
    const body = { address: address() };
    const first = await trace(org.key, body);
    const second = await trace(org.key, { address: { ...body.address, line1: body.address.line1.toUpperCase(), zip: '78701-0001' } });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body.id).not.toBe(first.body.id);
    expect(second.body.persons).toEqual(first.body.persons);
    expect(vendor.calls).toHaveLength(1);
    expect(await balance(org.organizationId)).toEqual({ credits: 3, charges: 2 });
  });

  it('shares one vendor call among concurrent identical traces', async () => {
    const org = await setupOrg(10);
    vendor.setMode('slow');
    vendor.setDelay(200);
    const body = { address: address() };
    const results = await Promise.all([0, 1, 2].map(() => trace(org.key, body)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(3);
    expect(vendor.calls).toHaveLength(1);
    expect(await balance(org.organizationId)).toEqual({ credits: 7, charges: 3 });
  });

  it('answers 504 timeout without a charge, keeps tracing, and serves the result to the retry without a new vendor call', async () => {
    const org = await setupOrg(5);
    vendor.setMode('slow');
    vendor.setDelay(TIMEOUT_MS + 400);
    const body = { address: address() };
    const timedOut = await trace(org.key, body);
    expect(timedOut.status).toBe(504);
    expect(timedOut.body.error.code).toBe('timeout');
    expect(await balance(org.organizationId)).toEqual({ credits: 5, charges: 0 });
    await sleep(700);
    const retry = await trace(org.key, body);
    expect(retry.status).toBe(200);
    expect(retry.body.status).toBe('records_found');
    expect(vendor.calls).toHaveLength(1);
    expect(await balance(org.organizationId)).toEqual({ credits: 4, charges: 1 });
    const audit = await service.sql(`select outcome, charged from skip_trace_requests where organization_id = ? order by created_at`, [
      org.organizationId,
    ]);
    expect(audit).toEqual([
      { outcome: 'timeout', charged: false },
      { outcome: 'records_found', charged: true },
    ]);
  });

  it.each([
    ['failing', 500, 'internal_error'],
    ['garbage', 500, 'internal_error'],
    ['wrong-request-id', 500, 'internal_error'],
    ['unresolvable', 422, 'invalid_request'],
  ] as const)('answers a %s vendor with %i %s, no charge and nothing cached', async (mode, status, code) => {
    const org = await setupOrg(5);
    vendor.setMode(mode);
    const body = { address: address() };
    const result = await trace(org.key, body);
    expect(result.status).toBe(status);
    expect(result.body.error.code).toBe(code);
    expect(result.text).not.toContain(vendor.apiKey);
    expect(await balance(org.organizationId)).toEqual({ credits: 5, charges: 0 });
    // Nothing was cached: the next call asks the vendor again, and now succeeds.
    vendor.setMode('ok');
    const retry = await trace(org.key, body);
    expect(retry.status).toBe(200);
    expect(vendor.calls).toHaveLength(2);
  });

  it('answers no_records_found for an unmatched trace, and charges it', async () => {
    const org = await setupOrg(5);
    vendor.setMode('unmatched');
    const result = await trace(org.key, { address: address() });
    expect(result.body).toEqual({ id: expect.any(String), status: 'no_records_found', persons: [] });
    expect(await balance(org.organizationId)).toEqual({ credits: 4, charges: 1 });
  });

  it('refuses traces past the per-key in-flight limit at once with 429 concurrency_limit', async () => {
    const org = await setupOrg(10);
    vendor.setMode('slow');
    vendor.setDelay(300);
    const started = Date.now();
    const results = await Promise.all([0, 1, 2, 3, 4].map(() => trace(org.key, { address: address() })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const refused = results.filter((r) => r.status === 429);
    expect(refused.every((r) => r.body.error.code === 'concurrency_limit')).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
    // Slots are released: the next call goes through.
    expect((await trace(org.key, { address: address() })).status).toBe(200);
    expect(await balance(org.organizationId)).toEqual({ credits: 6, charges: 4 });
  });

  it('audits every call past the credential check, including those refused before the trace ran', async () => {
    const org = await setupOrg(1);
    const ok = await trace(org.key, { address: address() });
    const invalid = await trace(org.key, { address: { ...address(), zip: 'nope' } });
    const broke = await trace(org.key, { address: address() });
    expect([ok.status, invalid.status, broke.status]).toEqual([200, 422, 402]);
    await sleep(100); // the route's audit row is written once the response is out
    const rows = await service.sql(
      `select id, outcome, charged, duration_ms, key_id from skip_trace_requests where organization_id = ? order by created_at`,
      [org.organizationId],
    );
    expect(rows.map((r) => [r.outcome, r.charged])).toEqual([
      ['records_found', true],
      ['invalid_request', false],
      ['insufficient_credits', false],
    ]);
    expect(rows[0].id).toBe(ok.body.id);
    expect(rows.every((r) => r.duration_ms >= 0 && typeof r.key_id === 'string')).toBe(true);
  });
});
