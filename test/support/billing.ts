/**
 * Helpers of the billing tests (idempotency, account, usage): an organization with credits and a
 * skip trace key, a trace with headers, and what the ledger says.
 */
import { randomUUID } from 'node:crypto';
import type { HttpResult, TestService } from './harness.js';

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
