/**
 * Helpers of the billing tests (idempotency, account, usage): an organization with credits and a
 * skip trace key, a trace with headers, and what the ledger says.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { startFakeVendor, vendorEnv, type FakeVendor } from './fake-vendor.js';
import { startService, type HttpResult, type TestService } from './harness.js';

/**
 * The service against a fake vendor (the http provider) with `env`, started before the file's
 * tests (given to `assign`) and closed after them; the vendor is reset before each test.
 */
export function useServiceWithVendor(env: Record<string, string>, assign: (started: { service: TestService; vendor: FakeVendor }) => void) {
  let started: { service?: TestService; vendor?: FakeVendor } = {};
  beforeAll(async () => {
    const vendor = await startFakeVendor();
    started.vendor = vendor;
    started.service = await startService({ ...vendorEnv(vendor), ...env });
    assign({ service: started.service, vendor });
  });
  afterAll(async () => {
    await started.service?.close();
    await started.vendor?.close();
    started = {};
  });
  beforeEach(() => started.vendor?.reset());
}

export interface BillingOrg {
  organizationId: string;
  key: string;
}

export async function setupBillingOrg(service: TestService, credits: number): Promise<BillingOrg> {
  const org = await service.graphql(`mutation($n: String!) { createOrganization(name: $n) { id } }`, { n: `Billing ${randomUUID()}` });
  const organizationId = org.body.data.createOrganization.id as string;
  if (credits > 0) await addCredits(service, organizationId, credits);
  const key = await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: organizationId });
  return { organizationId, key: key.body.data.generateSkipTraceKey.secret as string };
}

export async function addCredits(service: TestService, organizationId: string, amount: number) {
  const added = await service.graphql(
    `mutation($o: ID!, $n: Int!, $r: String!) { addSkipTraceCredits(organizationId: $o, amount: $n, reference: $r) { id } }`,
    { o: organizationId, n: amount, r: randomUUID() },
  );
  if (added.body.errors) throw new Error(JSON.stringify(added.body.errors));
}

/**
 * A street name that no other run or test file uses (letters only, so it stays a street name): with
 * DATABASE_URL the property records and the result cache outlive the run.
 */
export const uniqueStreet = (): string => 'Q' + [...randomBytes(9)].map((b) => 'bcdfghjklmnpqrstvwxz'[b % 20]).join('');

/** A street no other test uses, so cached results of one test never serve another. */
export const uniqueAddress = () => ({ line1: `${randomUUID().slice(0, 8)} Ledger Street`, city: 'Austin', state: 'TX', zip: '78701' });

/** `POST /api/v1/skiptrace`; a string body is sent as is. */
export function postTrace(
  service: TestService,
  key: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<HttpResult> {
  return service.request('/api/v1/skiptrace', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
}

/** The organization's balance and the request ids of its ledger charges. */
export async function ledger(service: TestService, organizationId: string): Promise<{ credits: number; charges: string[] }> {
  const [account] = await service.sql(`select skip_trace_credits::int as credits from organizations where id = ?`, [organizationId]);
  const charges = await service.sql(
    `select request_id::text as request_id from skip_trace_credit_ledger where organization_id = ? and kind = 'charge'`,
    [organizationId],
  );
  return { credits: account.credits, charges: charges.map((row) => row.request_id as string).sort() };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns a value other than undefined, for at most `ms`. */
export async function eventually<T>(probe: () => Promise<T | undefined>, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await sleep(50);
  }
}

/**
 * Races `send` on one Idempotency-Key: 25 requests at once, while the first is in flight, then 25
 * more at once after it has answered. Every answer must be that one 200 (fresh once, replayed
 * otherwise, the same id) or 409 idempotency_key_in_use, and the second wave all replays. The id.
 */
export async function raceOneKey(send: (i: number) => Promise<Pick<HttpResult, 'status' | 'body' | 'headers'>>): Promise<string> {
  const wave = (count: number) => Promise.all(Array.from({ length: count }, (_, i) => send(i)));
  const during = await wave(25);
  const after = await wave(25);
  const results = [...during, ...after];
  const seen = results.map((r) => `${r.status} ${r.headers.get('idempotent-replayed') ?? ''} ${r.body?.error?.code ?? ''}`.trim());
  expect(
    after.every((r) => r.status === 200 && r.headers.get('idempotent-replayed') === 'true'),
    seen.join(', '),
  ).toBe(true);
  const ok = results.filter((r) => r.status === 200);
  const inUse = results.filter((r) => r.status === 409);
  expect(ok.length + inUse.length).toBe(50);
  expect(inUse.every((r) => r.body.error.code === 'idempotency_key_in_use')).toBe(true);
  expect(inUse.length).toBeGreaterThan(0);
  expect(new Set(ok.map((r) => r.body.id)).size).toBe(1);
  expect(ok.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
  return ok[0].body.id as string;
}
