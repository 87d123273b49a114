/**
 * Writes follow the window: a request refused by its key's rate window writes nothing to the
 * database (the refusal metric counts it), whatever route or kind of request it is, so a flood
 * past the window costs no write and never fills the usage listing; the listing holds the calls
 * that passed the window.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import { publish, type TestService } from '../support/harness.js';
import { scrapedMetric } from '../support/metrics.js';
import { postTrace, setupBillingOrg, uniqueAddress, useServiceWithVendor } from '../support/billing.js';

const WINDOW = 5;
const FLOOD = 70;

let service: TestService;
let vendor: FakeVendor;

useServiceWithVendor(
  { SKIPTRACE_RATE_LIMIT_PER_MIN: String(WINDOW), GATEWAY_RATE_LIMIT_PER_MIN: String(WINDOW) },
  (started) => ({ service, vendor } = started),
);

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const get = (path: string, key: string) => service.request(path, { headers: bearer(key) });
const graphqlWith = (key: string, query: string, variables: Record<string, unknown> = {}) => service.graphql(query, variables, key);

const metric = (name: string, labels: Record<string, string>) => scrapedMetric(service, name, labels);

/** Every row the skip trace domain holds for an organization, as JSON: equal before and after means nothing was written. */
async function skipTraceFootprint(organizationId: string): Promise<string[]> {
  const tables = ['skip_trace_requests', 'skip_trace_credit_ledger', 'skip_trace_idempotency_keys', 'skip_trace_keys'];
  const rows = await Promise.all(
    tables.map((table) =>
      service.sql<{ json: string }>(`select row_to_json(t)::text as json from ${table} t where organization_id = ? order by 1`, [
        organizationId,
      ]),
    ),
  );
  const [account] = await service.sql<{ json: string }>(`select row_to_json(o)::text as json from organizations o where id = ?`, [
    organizationId,
  ]);
  return [...rows.flat().map((row) => row.json), account.json];
}

/** Every row of a user's feed, counters and keys, as JSON. */
async function userFootprint(userId: string): Promise<string[]> {
  const rows = await Promise.all(
    ['notifications', 'notification_counters', 'api_keys'].map((table) =>
      service.sql<{ json: string }>(`select row_to_json(t)::text as json from ${table} t where user_id = ? order by 1`, [userId]),
    ),
  );
  return rows.flat().map((row) => row.json);
}

describe('a skip trace key past its window', () => {
  it('writes nothing for any refused request (trace, keyed trace, account, usage, /graphql), and its usage lists only the calls the window passed', async () => {
    const org = await setupBillingOrg(service, 10);
    // The window's five: two charged traces, a refused body (audited), an account read and a usage read (not listed).
    const passed = [
      await postTrace(service, org.key, { address: uniqueAddress() }),
      await postTrace(service, org.key, { address: uniqueAddress() }, { 'Idempotency-Key': randomUUID() }),
      await postTrace(service, org.key, { address: { zip: 'nope' } }),
      await get('/api/v1/skiptrace/account', org.key),
      await get('/api/v1/skiptrace/usage', org.key),
    ];
    expect(passed.map((result) => result.status)).toEqual([200, 200, 422, 200, 200]);
    const before = await skipTraceFootprint(org.organizationId);
    const refusalsBefore = await metric('crm_rate_limit_refusals_total', { window: 'skip_trace' });
    const vendorCalls = vendor.calls.length;

    const kinds = [
      () => postTrace(service, org.key, { address: uniqueAddress() }),
      () => postTrace(service, org.key, { address: uniqueAddress() }, { 'Idempotency-Key': randomUUID() }),
      () => postTrace(service, org.key, '{"address": '),
      () => get('/api/v1/skiptrace/account', org.key),
      () => get('/api/v1/skiptrace/usage?limit=5', org.key),
      () => graphqlWith(org.key, `mutation($i: SkipTraceInput!) { skipTrace(input: $i) { id } }`, { i: { address: uniqueAddress() } }),
      () => graphqlWith(org.key, `{ skipTraceUsage(limit: 5) { requests { id outcome } } }`),
    ];
    const flood = await Promise.all(Array.from({ length: FLOOD }, (_, i) => kinds[i % kinds.length]()));
    expect(flood.every((result) => result.status === 429)).toBe(true);

    // Nothing written for the organization, nothing asked of the provider; the metric counted each refusal.
    expect(await skipTraceFootprint(org.organizationId)).toEqual(before);
    expect(vendor.calls.length).toBe(vendorCalls);
    expect((await metric('crm_rate_limit_refusals_total', { window: 'skip_trace' })) - refusalsBefore).toBe(FLOOD);

    // A rotated key has a window of its own: the usage holds the three audited calls of the window, no refusal of it.
    const rotated = await service.graphql(`mutation($o: ID!) { rotateSkipTraceKey(organizationId: $o) { secret } }`, {
      o: org.organizationId,
    });
    const key = rotated.body.data.rotateSkipTraceKey.secret as string;
    const usage = await get('/api/v1/skiptrace/usage?limit=200', key);
    expect(usage.status).toBe(200);
    expect(usage.body.requests.map((row: { outcome: string }) => row.outcome).sort()).toEqual([
      'invalid_request',
      'records_found',
      'records_found',
    ]);
    expect(usage.body.requests.map((row: { id: string }) => row.id)).toEqual(
      expect.arrayContaining([passed[0].body.id, passed[1].body.id]),
    );
    const viaGraphql = await graphqlWith(key, `{ skipTraceUsage(limit: 200) { requests { outcome } } }`);
    expect(viaGraphql.body.data.skipTraceUsage.requests).toHaveLength(3);
    const [audit] = await service.sql<{ count: number }>(
      `select count(*)::int as count from skip_trace_requests where organization_id = ?`,
      [org.organizationId],
    );
    expect(audit.count).toBe(3);
  });
});

describe('a gateway key past its window', () => {
  it('writes nothing for a refused mark, mark-all or read, on /api/v1/call and /graphql', async () => {
    const user = await service.provision({ scopes: ['READ', 'WRITE'] });
    const ids = await publish(service, user.userId, [{ title: 'a' }, { title: 'b' }, { title: 'c' }]);
    const list = { operationId: 'listNotifications', variables: {} };
    for (let i = 0; i < WINDOW; i++) expect((await service.call(user.key, list)).status).toBe(200);
    const before = await userFootprint(user.userId);
    const refusalsBefore = await metric('crm_rate_limit_refusals_total', { window: 'gateway' });

    const kinds = [
      () => service.call(user.key, { operationId: 'markNotificationsRead', variables: { notificationIds: ids, isSeen: true } }),
      () => service.call(user.key, { operationId: 'markAllNotificationsRead', variables: { isSeen: true } }),
      () => service.call(user.key, list),
      () =>
        graphqlWith(user.key, `mutation($ids: [ID!]!) { markNotificationsRead(notificationIds: $ids, isSeen: true) { updatedCount } }`, {
          ids,
        }),
      () => graphqlWith(user.key, `mutation { createApiKey(userId: "${user.userId}", scopes: [READ]) { id } }`),
    ];
    const flood = await Promise.all(Array.from({ length: FLOOD }, (_, i) => kinds[i % kinds.length]()));
    expect(flood.every((result) => result.status === 429)).toBe(true);

    expect(await userFootprint(user.userId)).toEqual(before);
    expect((await metric('crm_rate_limit_refusals_total', { window: 'gateway' })) - refusalsBefore).toBe(FLOOD);
  });
});
